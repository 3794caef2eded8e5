#!/bin/sh
# A kubelet credential-provider plugin for the tests. $1 is how it behaves; it logs each
# request (one line of JSON) to $PLUGIN_LOG. The password is in its output on every path, so a
# test sees at once if pullcheck ever shows a plugin's output.
request=$(cat)
printf '%s\n' "$request" | tr -d '\n' >> "$PLUGIN_LOG"
printf '\n' >> "$PLUGIN_LOG"
case "$1" in
  ok)
    printf '{"apiVersion":"credentialprovider.kubelet.k8s.io/v1","kind":"CredentialProviderResponse","cacheKeyType":"%s","cacheDuration":"%s","auth":{"%s":{"username":"%s","password":"%s"}}}\n' \
      "$PLUGIN_CACHE_KEY_TYPE" "$PLUGIN_CACHE_DURATION" "$PLUGIN_AUTH_KEY" "$PLUGIN_USER" "$PLUGIN_PASSWORD"
    ;;
  fail)
    echo "plugin-said: cannot get credentials for $PLUGIN_PASSWORD" >&2
    echo "plugin-said: $PLUGIN_PASSWORD"
    exit 3
    ;;
  garbage)
    echo "plugin-said: here is $PLUGIN_PASSWORD"
    ;;
  wrong-kind)
    printf '{"apiVersion":"v1","kind":"Secret","data":"plugin-said %s"}\n' "$PLUGIN_PASSWORD"
    ;;
  hang)
    exec sleep 30
    ;;
esac
