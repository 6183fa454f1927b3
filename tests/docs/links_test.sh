#!/usr/bin/env bash
# Every document the repository names is in the repository:
# - every relative Markdown link ([text](target), [label]: target, images
#   too) in every *.md file points at a file or folder of the repository,
#   and a #fragment on a Markdown target names one of its headings
#   (GitHub's slugs);
# - every docs/... path named in any text file (code comments, scripts,
#   CMake, documents) exists.
# In a git work tree only tracked files are read, and "in the repository"
# means tracked: a fresh clone must have it, so a link to a new document
# fails until the document is added (files the tests leave behind, such as
# new fuzz corpus entries, are not read). Links inside code
# (fenced blocks, `spans`) and URLs with a scheme are not checked.
#
# Before checking the tree, the checker is run on small fixtures that must
# fail (a broken link, a broken fragment, a missing docs/ path, a link out of
# the repository) and one that must pass, so the test cannot pass by checking
# nothing. Usage: links_test.sh [SOURCE_DIR] (default: this checkout).
set -euo pipefail
export LC_ALL=C

here=$(cd "$(dirname "$0")" && pwd)
source_dir=${1:-$(cd "$here/../.." && pwd)}

# The files of the tree at $1, one relative path per line: tracked files in a
# git work tree, else every file outside .git and build folders.
tracked_files() {
  if git -C "$1" rev-parse --is-inside-work-tree >/dev/null 2>&1; then
    git -C "$1" ls-files --cached
  else
    (cd "$1" && find . -type f -not -path './.git/*' -not -path './build*' | sed 's|^\./||')
  fi
}

# check ROOT: prints one line per broken reference; fails when there is one.
check() {
  local root=$1 work
  work=$(mktemp -d "${TMPDIR:-/tmp}/instance-guard-links.XXXXXX")
  tracked_files "$root" | sort -u >"$work/files"
  while IFS= read -r f; do
    if [[ -f $root/$f ]]; then printf '%s\n' "$f"; fi
  done <"$work/files" >"$work/scanned"
  # docs/... paths anywhere: "FILE:LINE:WORD", where WORD is the
  # whitespace- and quote-delimited word around the path.
  (cd "$root" && xargs -d '\n' -a "$work/scanned" \
    grep -IHnoE "[^][[:space:]\"'\`()<>{}|]*docs/[A-Za-z0-9_./-]*" /dev/null || true) \
    >"$work/docs_paths"
  grep -E '\.md$' "$work/scanned" | sed "s|^|$root/|" >"$work/markdown" || true

  local status=0
  awk -v root="$root/" -v files="$work/files" -v docs_paths="$work/docs_paths" '
    function normalize(path,    n, parts, out, i, k, result) {
      n = split(path, parts, "/")
      k = 0
      for (i = 1; i <= n; i++) {
        if (parts[i] == "" || parts[i] == ".") continue
        if (parts[i] == "..") {
          if (k == 0) return "\001outside"
          k--
        } else {
          out[++k] = parts[i]
        }
      }
      result = ""
      for (i = 1; i <= k; i++) result = result (i > 1 ? "/" : "") out[i]
      return result
    }
    function dir_of(path) { return path ~ /\// ? substr(path, 1, match(path, /\/[^\/]*$/) - 1) : "" }
    function slug(text) {
      text = tolower(text)
      gsub(/[^a-z0-9 _\200-\377-]/, "", text)
      gsub(/ /, "-", text)
      return text
    }
    function broken(where, what) { print where ": " what; bad = 1 }
    BEGIN {
      while ((getline line < files) > 0) {
        exists[line] = 1
        for (d = dir_of(line); d != ""; d = dir_of(d)) exists[d] = 1
      }
      exists[""] = 1
    }
    # Pass over the Markdown files: headings (for fragments) and links.
    FNR == 1 { rel = substr(FILENAME, length(root) + 1); fence = "" }
    {
      if (fence == "" && match($0, /^ *(```|~~~)/)) { fence = substr($0, RSTART, RLENGTH); sub(/^ */, "", fence); next }
      if (fence != "") { if (index($0, fence) == 1 || $0 ~ ("^ *" fence)) fence = ""; next }
      if ($0 ~ /^#+ /) {
        heading = $0
        sub(/^#+ +/, "", heading); sub(/ +#* *$/, "", heading)
        s = slug(heading)
        n = seen_slug[rel, s]++
        anchors[rel, n ? s "-" n : s] = 1
      }
      line = $0
      gsub(/`[^`]*`/, "", line)
      while (match(line, /\]\([^)]*\)/)) {
        target = substr(line, RSTART + 2, RLENGTH - 3)
        line = substr(line, RSTART + RLENGTH)
        links[++nlinks] = rel ":" FNR "\t" rel "\t" target
      }
      if (match(line, /^ {0,3}\[[^]]+\]: +[^ ]+/)) {
        target = line; sub(/^ {0,3}\[[^]]+\]: +/, "", target); sub(/ .*/, "", target)
        links[++nlinks] = rel ":" FNR "\t" rel "\t" target
      }
    }
    END {
      for (i = 1; i <= nlinks; i++) {
        split(links[i], f, "\t")
        target = f[3]
        sub(/^ +/, "", target); sub(/ +"[^"]*" *$/, "", target); sub(/^</, "", target); sub(/>$/, "", target)
        if (target == "" || target ~ /^#/ && target !~ /^#./) continue
        if (target ~ /^[A-Za-z][A-Za-z0-9+.-]*:/) continue  # a URL
        fragment = ""
        if (index(target, "#")) { fragment = substr(target, index(target, "#") + 1); target = substr(target, 1, index(target, "#") - 1) }
        sub(/\?.*/, "", target)
        if (target == "") path = f[2]
        else if (target ~ /^\//) path = normalize(target)
        else path = normalize((dir_of(f[2]) == "" ? "" : dir_of(f[2]) "/") target)
        if (path == "\001outside") { broken(f[1], "link out of the repository: " f[3]); continue }
        if (!(path in exists)) { broken(f[1], "link to a missing file: " f[3]); continue }
        if (fragment != "" && path ~ /\.md$/ && !((path, fragment) in anchors)) {
          broken(f[1], "link to a missing heading: " f[3])
        }
      }
      while ((getline hit < docs_paths) > 0) {
        # FILE:LINE:WORD
        if (!match(hit, /:[0-9]+:/)) continue
        word = substr(hit, RSTART + RLENGTH)
        where = substr(hit, 1, RSTART + RLENGTH - 2)
        if (word ~ /:\/\//) continue  # part of a URL
        # The path: the trailing run of path characters of the word. One
        # starting with ./ or ../ is relative to the naming file; one starting
        # with docs/ (or /docs/, after a variable such as $SOURCE_DIR) may be
        # relative to the repository or to the naming file. tests/docs/...
        # and the like are not docs/ paths.
        match(word, /[A-Za-z0-9_.\/-]*$/)
        path = substr(word, RSTART)
        sub(/[.,:;-]+$/, "", path)
        file = where; sub(/:[0-9]+$/, "", file)
        base = dir_of(file) == "" ? "" : dir_of(file) "/"
        if (path ~ /^\.\.?\//) {
          if (path !~ /^(\.\.?\/)+docs\//) continue
          if (!(normalize(base path) in exists)) broken(where, "names a missing document: " path)
          continue
        }
        sub(/^\//, "", path)
        if (path !~ /^docs\//) continue
        if (!(normalize(path) in exists) && !(normalize(base path) in exists)) {
          broken(where, "names a missing document: " path)
        }
      }
      exit bad
    }
  ' $(cat "$work/markdown") /dev/null || status=1
  rm -rf "$work"
  return "$status"
}

# --- The checker must fail on what it is meant to catch. --------------------
fixtures=$(mktemp -d "${TMPDIR:-/tmp}/instance-guard-links-fixtures.XXXXXX")
trap 'rm -rf "$fixtures"' EXIT
d=docs  # spelled apart, so this file names no docs path itself
make_fixture() {  # make_fixture NAME: a small tree that passes the check
  local t=$fixtures/$1
  mkdir -p "$t/$d/sub" "$t/src"
  printf '# Guide\n\n## Two words\n\nSee [sub](sub/page.md#a-heading), [self](#two-words),\n' >"$t/$d/guide.md"
  printf '[top](../README.md), [a folder](../src/) and <https://example.org/x>.\n' >>"$t/$d/guide.md"
  printf '```\n[not checked](nowhere.md)\n```\nAnd `[code](nowhere.md)` neither.\n' >>"$t/$d/guide.md"
  printf '[ref]: ../guide.md\n\n## A heading\n' >"$t/$d/sub/page.md"
  printf '# Top\n![plot](%s/guide.md)\n' "$d" >"$t/README.md"
  printf '// See %s/guide.md, %s/sub/page.md, and %s/ (all %s/*.md), https://h/%s/gone.md.\n' \
    "$d" "$d" "$d" "$d" "$d" >"$t/src/main.cpp"
}
make_fixture good
out=$(check "$fixtures/good" 2>&1) || { echo "FAIL: the checker refused a good tree: $out" >&2; exit 1; }

# One tree with one fault of each kind; the check must fail and name each.
make_fixture bad
echo 'A [broken](missing.md) link.' >>"$fixtures/bad/$d/guide.md"
echo 'A [broken](sub/page.md#no-such-heading) fragment.' >>"$fixtures/bad/$d/guide.md"
echo 'Out [there](../../elsewhere/notes.md).' >>"$fixtures/bad/$d/guide.md"
echo "# see $d/gone/away.md." >"$fixtures/bad/src/build.sh"
if out=$(check "$fixtures/bad" 2>&1); then
  echo "FAIL: the checker passed a tree with broken references" >&2
  exit 1
fi
for expected in "link to a missing file: missing.md" \
  "link to a missing heading: sub/page.md#no-such-heading" \
  "link out of the repository: ../../elsewhere/notes.md" \
  "names a missing document: $d/gone/away.md"; do
  grep -qF -- "$expected" <<<"$out" || { echo "FAIL: the checker missed \"$expected\": $out" >&2; exit 1; }
done

# --- The tree itself. --------------------------------------------------------
if ! check "$source_dir"; then
  echo "FAIL: the references above name documents that are not in the repository" \
    "(a new file must be added to git)" >&2
  exit 1
fi
echo "PASS: every Markdown link and docs/ path in $source_dir resolves"
