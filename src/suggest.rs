//! "Did you mean …?" for a tag or repository that does not exist: the few existing names
//! closest to the one asked for, for the error message. Pure and deterministic; the work is
//! bounded whatever the registry returns (see [`suggest`]).
//!
//! A candidate is suggested only when it is plausibly what was meant, so that a miss yields
//! nothing rather than junk. It must be one of:
//!
//! 1. the same name in another case (`V1` → `v1`);
//! 2. a *version neighbour*: both names are versions, `[v]N(.N)*` followed by an optional
//!    suffix (`v3`, `1.25-alpine`), and the suffixes agree: equal ignoring case, or both
//!    non-empty and one a prefix of the other (`-alpine` / `-alpine3.18`) or within the edit
//!    threshold below. A leading `v` is ignored, so `v1.2` finds `1.2`;
//! 3. an extension: the candidate starts with the wanted name, which has at least
//!    [`MIN_PREFIX`] characters (`lates` → `latest`, `nightly` → `nightly-2024-05-01`);
//! 4. within the edit threshold: an optimal-string-alignment (Damerau–Levenshtein with
//!    adjacent transpositions) distance, ignoring case, of at most 2/5 of the longer name's
//!    length and at most half (rounded up) of the part that differs (the longer name without
//!    the prefix and suffix both share, so that a wholly different part is never "close"),
//!    and at least 1 (`pytorch-stable-py37` → `pytorch-stable-py3.7`, `team/ap` → `team/app`,
//!    `library/ngnix` → `library/nginx` but not `library/node`; `zzz` finds nothing among
//!    `v1`, `v2`).
//!
//! Ranking, best first: the same name in another case; then version neighbours, by closeness
//! of the versions (equal versions, then one the other's prefix, e.g. `1.25` and `1.25.3`,
//! then most leading components shared, lower before higher, smallest step in the first
//! differing component, newest, fewest edits), so `v3` among `v1`, `v1.1`, `v2` gives `v2`,
//! `v1.1`, `v1`; then the rest by edit distance, longest common prefix, closest length. The
//! candidate's text breaks any remaining tie.

use std::cmp::Reverse;

/// At most this many candidates are looked at; the rest are ignored.
pub(crate) const MAX_CANDIDATES: usize = 10_000;
/// Names (wanted or candidate) longer than this many characters are ignored.
pub(crate) const MAX_LEN: usize = 256;
/// Edit distances are computed up to this bound (longer ones all count as this plus one),
/// which keeps each comparison at most `MAX_LEN × (2·MAX_EDITS + 1)` steps.
const MAX_EDITS: usize = 16;
/// Between version neighbours edits only break ties; they are counted up to this bound.
const VERSION_TIE_EDITS: usize = 4;
/// The shortest wanted name for which "the candidate starts with it" is enough.
pub(crate) const MIN_PREFIX: usize = 3;

/// Up to `max` existing names close to `wanted`, best first, never `wanted` itself nor a name
/// twice. Only the first [`MAX_CANDIDATES`] candidates are considered and names over
/// [`MAX_LEN`] characters are skipped, so the cost is at most
/// `O(MAX_CANDIDATES · MAX_LEN · MAX_EDITS)` whatever the input. The rules are in the module
/// documentation.
pub(crate) fn suggest<'a>(
    wanted: &str,
    candidates: impl IntoIterator<Item = &'a str>,
    max: usize,
) -> Vec<String> {
    if max == 0 || wanted.is_empty() || too_long(wanted) {
        return Vec::new();
    }
    let mut wanted_lower = Vec::new();
    lower_into(wanted, &mut wanted_lower);
    let wanted_version = Version::parse(&wanted_lower);
    let mut scratch = Scratch::default();
    let mut scored: Vec<(Key, &'a str)> = Vec::new();
    for candidate in candidates.into_iter().take(MAX_CANDIDATES) {
        if candidate == wanted || candidate.is_empty() || too_long(candidate) {
            continue;
        }
        lower_into(candidate, &mut scratch.candidate);
        let cand = scratch.candidate.as_slice();
        let key = if cand == wanted_lower.as_slice() {
            Some(Key::SameIgnoringCase)
        } else {
            score(
                &wanted_lower,
                wanted_version.as_ref(),
                cand,
                &mut scratch.rows,
            )
        };
        if let Some(key) = key {
            scored.push((key, candidate));
        }
    }
    scored.sort_unstable();
    let mut out: Vec<String> = Vec::with_capacity(max.min(scored.len()));
    for (_, candidate) in scored {
        if out.len() == max {
            break;
        }
        if out.last().is_none_or(|last| last != candidate) {
            out.push(candidate.to_owned());
        }
    }
    out
}

/// Up to `max` of `tags`, for a message when none is close to the one asked for: version tags
/// newest first (`v3.1`, `3.0`, `2.9-alpine`), then the others in the registry's order. Names
/// over [`MAX_LEN`] characters are skipped, and only the first [`MAX_CANDIDATES`] are read.
pub(crate) fn some_tags(tags: &[String], max: usize) -> Vec<String> {
    let mut lower = Vec::new();
    let mut versions: Vec<(Reverse<Vec<u64>>, usize)> = Vec::new();
    let mut others: Vec<usize> = Vec::new();
    for (i, tag) in tags.iter().enumerate().take(MAX_CANDIDATES) {
        if tag.is_empty() || too_long(tag) {
            continue;
        }
        lower_into(tag, &mut lower);
        match Version::parse(&lower) {
            Some(v) => versions.push((Reverse(v.numbers), i)),
            None => others.push(i),
        }
    }
    versions.sort();
    let mut out: Vec<String> = Vec::new();
    for i in versions.into_iter().map(|(_, i)| i).chain(others) {
        if out.len() == max {
            break;
        }
        if !out.contains(&tags[i]) {
            out.push(tags[i].clone());
        }
    }
    out
}

/// Sort key of an accepted candidate; smaller is better. Variant order is group order.
#[derive(Debug, PartialEq, Eq, PartialOrd, Ord)]
enum Key {
    SameIgnoringCase,
    Version {
        /// 0 equal versions, 1 one a prefix of the other, 2 otherwise
        relation: u8,
        shared: Reverse<usize>,
        /// 0 candidate older, 1 newer (at the first differing component)
        newer: u8,
        step: u64,
        newest: Reverse<Vec<u64>>,
        suffix_differs: bool,
        edits: usize,
    },
    Edit {
        edits: usize,
        shared_prefix: Reverse<usize>,
        length_gap: usize,
    },
}

#[derive(Default)]
struct Scratch {
    candidate: Vec<char>,
    rows: [Vec<usize>; 3],
}

/// `[v]N(.N)*suffix` of a lower-cased name, components without trailing zeros (`1.0` = `1`).
struct Version<'s> {
    numbers: Vec<u64>,
    suffix: &'s [char],
}

impl<'s> Version<'s> {
    fn parse(name: &'s [char]) -> Option<Version<'s>> {
        let mut rest = name.strip_prefix(&['v']).unwrap_or(name);
        let mut numbers = Vec::new();
        loop {
            let digits = rest.iter().take_while(|c| c.is_ascii_digit()).count();
            if digits == 0 {
                break;
            }
            let (number, tail) = rest.split_at(digits);
            numbers.push(number.iter().fold(0_u64, |n, c| {
                n.saturating_mul(10)
                    .saturating_add(u64::from(c.to_digit(10).unwrap_or(0)))
            }));
            rest = tail;
            match rest {
                ['.', next, ..] if next.is_ascii_digit() => rest = &rest[1..],
                _ => break,
            }
        }
        if numbers.is_empty() {
            return None;
        }
        Some(Version {
            numbers,
            suffix: rest,
        })
    }
}

fn score(
    wanted: &[char],
    wanted_version: Option<&Version<'_>>,
    cand: &[char],
    rows: &mut [Vec<usize>; 3],
) -> Option<Key> {
    let threshold = threshold(wanted, cand);
    if let (Some(w), Some(c)) = (wanted_version, Version::parse(cand)) {
        if suffixes_agree(w.suffix, c.suffix, rows) {
            return Some(version_key(
                w,
                c,
                osa_distance(wanted, cand, VERSION_TIE_EDITS, rows),
            ));
        }
    }
    let extends = wanted.len() >= MIN_PREFIX && cand.starts_with(wanted);
    let bound = if extends { MAX_EDITS } else { threshold };
    let edits = osa_distance(wanted, cand, bound, rows);
    if !extends && edits > threshold {
        return None;
    }
    Some(Key::Edit {
        edits,
        shared_prefix: Reverse(wanted.iter().zip(cand).take_while(|(a, b)| a == b).count()),
        length_gap: wanted.len().abs_diff(cand.len()),
    })
}

fn suffixes_agree(wanted: &[char], cand: &[char], rows: &mut [Vec<usize>; 3]) -> bool {
    if wanted == cand {
        return true;
    }
    if wanted.is_empty() || cand.is_empty() {
        return false;
    }
    if wanted.starts_with(cand) || cand.starts_with(wanted) {
        return true;
    }
    let threshold = threshold(wanted, cand);
    osa_distance(wanted, cand, threshold, rows) <= threshold
}

/// The most edits for `a` and `b` to count as alike: 2/5 of the longer one's length, but no
/// more than half (rounded up) of the part that differs once their common prefix and suffix
/// are removed (so `library/` in front of two repositories does not make unrelated names
/// alike); at least 1, at most [`MAX_EDITS`].
fn threshold(a: &[char], b: &[char]) -> usize {
    let prefix = a.iter().zip(b).take_while(|(x, y)| x == y).count();
    let rest = a.len().min(b.len()) - prefix;
    let suffix = a
        .iter()
        .rev()
        .zip(b.iter().rev())
        .take(rest)
        .take_while(|(x, y)| x == y)
        .count();
    let differing = a.len().max(b.len()) - prefix - suffix;
    let longer = a.len().max(b.len());
    (longer * 2 / 5)
        .min(differing.div_ceil(2))
        .clamp(1, MAX_EDITS)
}

fn version_key(wanted: &Version<'_>, cand: Version<'_>, edits: usize) -> Key {
    let (w, c) = (&wanted.numbers, &cand.numbers);
    let shared = w.iter().zip(c).take_while(|(a, b)| a == b).count();
    // `v1` and `v1.0` are the same version; but `1.0` is not a prefix of `1.2` (that would
    // rank it above `1.1`): only components actually written count towards a prefix.
    let (relation, newer, step) = if without_trailing_zeros(w) == without_trailing_zeros(c) {
        (0, 0, 0)
    } else {
        match (w.get(shared), c.get(shared)) {
            (Some(a), Some(b)) => (2, u8::from(b > a), a.abs_diff(*b)),
            _ => (1, 0, 0),
        }
    };
    Key::Version {
        relation,
        shared: Reverse(shared),
        newer,
        step,
        newest: Reverse(without_trailing_zeros(&cand.numbers).to_vec()),
        suffix_differs: wanted.suffix != cand.suffix,
        edits,
    }
}

fn without_trailing_zeros(v: &[u64]) -> &[u64] {
    let mut n = v.len();
    while n > 1 && v[n - 1] == 0 {
        n -= 1;
    }
    &v[..n]
}

/// Optimal string alignment distance between `a` and `b`, or `bound + 1` when it exceeds
/// `bound`; only the diagonal band of width `2·bound + 1` is computed.
fn osa_distance(a: &[char], b: &[char], bound: usize, rows: &mut [Vec<usize>; 3]) -> usize {
    let over = bound + 1;
    if a.len().abs_diff(b.len()) > bound {
        return over;
    }
    let [before, previous, current] = rows;
    for row in [&mut *before, &mut *previous, &mut *current] {
        if row.len() <= b.len() {
            row.resize(b.len() + 1, over);
        }
    }
    // Row i is only read in the band |i - j| <= bound and the cell either side of it, which
    // are written first; the rest may hold values from earlier calls.
    for (j, cell) in previous
        .iter_mut()
        .enumerate()
        .take(b.len().min(bound + 1) + 1)
    {
        *cell = j.min(over);
    }
    for i in 1..=a.len() {
        let low = i.saturating_sub(bound).max(1);
        let high = (i + bound).min(b.len());
        current[low - 1] = if low == 1 { i.min(over) } else { over };
        if let Some(cell) = current.get_mut(high + 1) {
            *cell = over;
        }
        let mut row_min = current[low - 1];
        for j in low..=high {
            let cost = usize::from(a[i - 1] != b[j - 1]);
            let mut d = (previous[j - 1] + cost)
                .min(previous[j] + 1)
                .min(current[j - 1] + 1);
            if i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1] {
                d = d.min(before[j - 2] + 1);
            }
            current[j] = d.min(over);
            row_min = row_min.min(current[j]);
        }
        if row_min > bound {
            return over;
        }
        std::mem::swap(before, previous);
        std::mem::swap(previous, current);
    }
    previous[b.len()].min(over)
}

/// Lower-cases `s` into `out` as chars, quickly when it is ASCII.
fn lower_into(s: &str, out: &mut Vec<char>) {
    out.clear();
    if s.is_ascii() {
        out.extend(s.bytes().map(|b| char::from(b.to_ascii_lowercase())));
    } else {
        out.extend(s.chars().flat_map(char::to_lowercase));
    }
}

fn too_long(s: &str) -> bool {
    s.len() > MAX_LEN && s.chars().nth(MAX_LEN).is_some()
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::indexing_slicing)]
mod tests {
    use super::*;

    /// (name, wanted, candidates, max, expected).
    type Case<'a> = (&'a str, &'a str, &'a [&'a str], usize, &'a [&'a str]);

    #[rustfmt::skip]
    #[test]
    fn some_tags_lists_newest_versions_first_then_the_rest() {
        let tags: Vec<String> = ["latest", "v1", "1.10", "v1.9", "main", "2.0-alpine", "v1"]
            .iter()
            .map(|s| s.to_string())
            .collect();
        assert_eq!(
            some_tags(&tags, 5),
            ["2.0-alpine", "1.10", "v1.9", "v1", "latest"]
        );
        assert_eq!(some_tags(&tags, 10).len(), 6, "each tag once");
        assert!(some_tags(&[], 5).is_empty());
        let long = vec!["x".repeat(MAX_LEN + 1), "ok".to_string()];
        assert_eq!(some_tags(&long, 5), ["ok"]);
    }

    #[test]
    fn table() {
        let cases: &[Case<'_>] = &[
            (
                "missing dot",
                "pytorch-stable-py37",
                &["pytorch-stable-py3.7", "pytorch-nightly-py3.7", "latest"],
                1,
                &["pytorch-stable-py3.7"],
            ),
            (
                "missing dot, all",
                "pytorch-stable-py37",
                &["latest", "pytorch-nightly-py3.7", "pytorch-stable-py3.7"],
                5,
                &["pytorch-stable-py3.7"],
            ),
            (
                "two typos",
                "pytroch-stabel",
                &["pytorch-stable", "pytorch-nightly"],
                5,
                &["pytorch-stable"],
            ),
            (
                "different word is no typo",
                "app-frontend-v2",
                &["app-backend-v2"],
                5,
                &[],
            ),
            (
                "too many edits",
                "pr-1234-bild",
                &["pr-23-build-69", "pr-1234-build"],
                5,
                &["pr-1234-build"],
            ),
            (
                "version too new",
                "v3",
                &["v1", "v1.0", "v1.1", "v2", "latest"],
                5,
                &["v2", "v1.1", "v1", "v1.0"],
            ),
            (
                "closest minor version first",
                "1.2",
                &["1.0", "1.1"],
                3,
                &["1.1", "1.0"],
            ),
            (
                "version too new, order independent",
                "v3",
                &["latest", "v2", "v1.1", "v1.0", "v1"],
                2,
                &["v2", "v1.1"],
            ),
            (
                "truncated",
                "lates",
                &["latest", "stable", "v1"],
                5,
                &["latest"],
            ),
            (
                "alpine flavours",
                "1.25-alpine",
                &[
                    "1.25.3-alpine",
                    "1.25-alpine3.18",
                    "1.24-alpine",
                    "mainline",
                ],
                5,
                &["1.25-alpine3.18", "1.25.3-alpine", "1.24-alpine"],
            ),
            ("nothing close", "zzz", &["v1", "v2"], 5, &[]),
            ("case", "V1", &["v1", "x"], 5, &["v1"]),
            (
                "case before version neighbours",
                "V1",
                &["v2", "v1"],
                5,
                &["v1", "v2"],
            ),
            (
                "repository",
                "team/ap",
                &["team/app", "team/api", "other/app"],
                5,
                &["team/api", "team/app"],
            ),
            (
                "repository typo",
                "library/ngnix",
                &["library/nginx", "library/node", "bitnami/nginx"],
                5,
                &["library/nginx"],
            ),
            ("no candidates", "v1", &[], 5, &[]),
            ("only itself", "v1", &["v1"], 5, &[]),
            (
                "itself skipped",
                "latest",
                &["latest", "latest-1", "atest"],
                5,
                &["atest", "latest-1"],
            ),
            (
                "duplicates once",
                "lates",
                &["latest", "latest"],
                5,
                &["latest"],
            ),
            ("max", "v3", &["v1", "v2"], 1, &["v2"]),
            ("max zero", "v3", &["v1", "v2"], 0, &[]),
            ("empty wanted", "", &["v1"], 5, &[]),
            (
                "patch releases newest first",
                "1.25",
                &["1.25.1", "1.25.3", "1.26", "1.24.9"],
                5,
                &["1.25.3", "1.25.1", "1.24.9", "1.26"],
            ),
            (
                "floating tag before other patches",
                "1.25.3",
                &["1.25.4", "1.25", "1.25.2"],
                5,
                &["1.25", "1.25.2", "1.25.4"],
            ),
            (
                "same minor before other minors",
                "1.25.3",
                &["1.24.3", "1.25.9"],
                5,
                &["1.25.9", "1.24.3"],
            ),
            (
                "v prefix ignored",
                "v1.2",
                &["1.2", "1.3", "v1.1"],
                5,
                &["1.2", "v1.1", "1.3"],
            ),
            (
                "suffix must agree",
                "1.25-alpine",
                &["1.25", "1.25-bookworm", "1.24-alpine"],
                5,
                &["1.24-alpine"],
            ),
            (
                "suffix typo",
                "v1.2.3-rc1",
                &["v1.2.3-rc.1", "v1.2.2-rc1"],
                5,
                &["v1.2.3-rc.1", "v1.2.2-rc1"],
            ),
            (
                "extension",
                "nightly",
                &["nightly-2024-05-01", "stable"],
                5,
                &["nightly-2024-05-01"],
            ),
            ("short wanted is no prefix", "ab", &["abcdefgh"], 5, &[]),
            ("transposition", "lastet", &["latest"], 5, &["latest"]),
            ("unicode case", "ÄPFEL", &["äpfel"], 5, &["äpfel"]),
            (
                "too long candidate ignored",
                "lates",
                &[&format!("latest{}", "x".repeat(300)), "latest"],
                5,
                &["latest"],
            ),
            (
                "date tags",
                "20240502",
                &["20240501", "20230101"],
                5,
                &["20240501", "20230101"],
            ),
        ];
        let mut failures = Vec::new();
        for &(name, wanted, candidates, max, expected) in cases {
            let got = suggest(wanted, candidates.iter().copied(), max);
            if got != expected {
                failures.push(format!(
                    "{name}: suggest({wanted:?}) = {got:?}, want {expected:?}"
                ));
            }
        }
        assert!(failures.is_empty(), "{}", failures.join("\n"));
    }

    #[test]
    fn deterministic_whatever_the_order() {
        let mut tags = [
            "v1", "v1.0", "v1.1", "v2", "latest", "v2-rc", "V2", "v3.0.1",
        ];
        let first = suggest("v3", tags.iter().copied(), 10);
        tags.reverse();
        assert_eq!(suggest("v3", tags.iter().copied(), 10), first);
        tags.sort_unstable();
        assert_eq!(suggest("v3", tags.iter().copied(), 10), first);
        assert_eq!(first[0], "v3.0.1");
    }

    #[test]
    fn only_first_candidates_considered() {
        let mut tags: Vec<String> = (0..MAX_CANDIDATES).map(|i| format!("x{i:05}")).collect();
        tags.push("latest".into());
        let got = suggest("lates", tags.iter().map(String::as_str), 3);
        assert!(got.is_empty(), "{got:?}");
    }

    #[test]
    fn huge_inputs_stay_bounded() {
        let tags: Vec<String> = (0..20_000)
            .map(|i| format!("{}.{}.{}-build{i}", i % 7, i % 13, i % 100))
            .collect();
        let got = suggest("3.5.42-build1234", tags.iter().map(String::as_str), 5);
        assert_eq!(got.len(), 5);
        let long: Vec<String> = (0..200)
            .map(|i| format!("{i}{}", "ab".repeat(120)))
            .collect();
        let wanted = "ab".repeat(125);
        let got = suggest(&wanted, long.iter().map(String::as_str), 3);
        assert!(got.len() <= 3);
        assert!(suggest(&"a".repeat(MAX_LEN + 1), ["a"], 3).is_empty());
    }

    /// Textbook full-matrix OSA distance.
    fn naive_osa(a: &[char], b: &[char]) -> usize {
        let mut d = vec![vec![0; b.len() + 1]; a.len() + 1];
        for (i, row) in d.iter_mut().enumerate() {
            row[0] = i;
        }
        d[0] = (0..=b.len()).collect();
        for i in 1..=a.len() {
            for j in 1..=b.len() {
                let cost = usize::from(a[i - 1] != b[j - 1]);
                let mut v = (d[i - 1][j - 1] + cost)
                    .min(d[i - 1][j] + 1)
                    .min(d[i][j - 1] + 1);
                if i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1] {
                    v = v.min(d[i - 2][j - 2] + 1);
                }
                d[i][j] = v;
            }
        }
        d[a.len()][b.len()]
    }

    #[test]
    fn banded_distance_agrees_with_full_matrix() {
        let mut seed = 0x2545_f491_4f6c_dd1d_u64;
        let mut next = |n: u64| {
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            seed % n
        };
        // One set of rows for all, so that values left by a call cannot leak into the next.
        let mut rows = Default::default();
        for _ in 0..3000 {
            let mut word = |max: u64| -> Vec<char> {
                (0..next(max))
                    .map(|_| char::from(b'a' + next(3) as u8))
                    .collect()
            };
            let a = word(14);
            let b = word(14);
            let bound = next(8) as usize;
            let want = naive_osa(&a, &b).min(bound + 1);
            assert_eq!(
                osa_distance(&a, &b, bound, &mut rows),
                want,
                "{a:?} {b:?} ≤{bound}"
            );
        }
    }

    #[test]
    fn osa_distance_table() {
        let cases: &[(&str, &str, usize, usize)] = &[
            ("", "", 5, 0),
            ("abc", "", 5, 3),
            ("", "abc", 2, 3),
            ("kitten", "sitting", 5, 3),
            ("ca", "ac", 5, 1),
            ("abcdef", "abdcef", 5, 1),
            ("lates", "latest", 5, 1),
            ("kitten", "sitting", 2, 3),
            ("abcdefgh", "hgfedcba", 3, 4),
            ("flaw", "lawn", 5, 2),
        ];
        let mut rows = Default::default();
        for &(a, b, bound, want) in cases {
            let a: Vec<char> = a.chars().collect();
            let b: Vec<char> = b.chars().collect();
            assert_eq!(
                osa_distance(&a, &b, bound, &mut rows),
                want,
                "{a:?} {b:?} ≤{bound}"
            );
        }
    }
}
