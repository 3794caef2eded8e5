# Shell helpers of the cluster's build scripts (tests/cluster/build*.sh). Source it; it defines
# functions only.

# lock_cache CACHE: holds an exclusive lock on the build of the cache folder CACHE until the
# calling script exits. A build started while another of the same runs (CI starts the cluster's
# builds early, beside the Rust builds; tests/cluster/test.sh asks for them again) waits for it,
# then finds the folder built, instead of both writing CACHE.tmp.
lock_cache() {
  mkdir -p "$(dirname "$1")"
  exec 9>"$1.lock"
  flock 9
}
