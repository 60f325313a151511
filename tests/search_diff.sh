#!/bin/sh
# workspace/glob and workspace/grep against find and GNU grep on one generated tree: names with
# spaces, UTF-8, a newline, a tab and a '*'; symlinks to files, directories, outside and nowhere;
# binary files, a FIFO, CRLF, no final newline, empty files, a long line; VCS directories (and a
# worktree's .git file) at several depths, holding matches that must not show. Every match of
# ours (the uncapped raw API, through tests/ws_search.c) must equal, byte for byte, `find -type f`
# (VCS pruned) and `grep -rnEI` (VCS excluded), both in the C locale; ours must come in path
# order as well.  Usage: tests/search_diff.sh WS_SEARCH
set -u
ws=$(cd "$(dirname "$1")" && pwd)/$(basename "$1")
tmp=$(mktemp -d /tmp/acp-search-diff-XXXXXX)
trap 'rm -rf "$tmp"' EXIT
export LC_ALL=C
t=$tmp/tree
fails=0 globs=0 greps=0
fail() { echo "search_diff: FAILED: $*"; fails=$((fails + 1)); }

# $(text SEED LINES): source-like lines of a fixed vocabulary (awk's rand, seeded).
text() {
	awk -v seed="$1" -v n="$2" 'BEGIN {
		srand(seed)
		nw = split("int static void return if else for while foo bar baz main printf struct char x y z 0 1 42 abc ab aab ac a.c caf\303\251 {} ();", w, " ")
		for (i = 0; i < n; i++) {
			k = int(rand() * 10); line = ""
			for (j = 0; j < k; j++) line = line (j ? (rand() < 0.1 ? "  " : " ") : (rand() < 0.2 ? "\t" : "")) w[int(rand() * nw) + 1]
			print line
		}
	}'
}

mkdir -p "$t" && cd "$t" || exit 1
n=0
for d in . src src/lib "dir with space" "dir with space/sub" "caf$(printf '\303\251')/$(printf '\346\227\245\346\234\254')" \
	deep/a/b/c/d/e/f .hidden "$(printf 'nl\ndir')" wt vendor/pkg; do
	mkdir -p "$d"
	for f in a.c b.h "x y.c" main.c notes.txt "$(printf '\303\251t\303\251').c" .dot.c "-dash.c"; do
		n=$((n + 1))
		text $n $((n % 40 + 1)) > "$d/$f"
	done
done
text 900 30 > "$(printf 'new\nline.c')"
text 901 30 > "$(printf 'tab\tname.c')"
text 902 30 > '*.c'
printf 'foo main\r\nint x;\r\n\r\n' > crlf.c
printf 'int main' > nofinal.c
: > empty.c
awk 'BEGIN { for (i = 0; i < 3000; i++) printf "foo bar "; print "" }' > long.c
printf 'int main\000 foo\n' > binary.c
printf '\000\001\002 foo main' > src/data.bin
mkfifo src/fifo.c
ln -s src/lib/a.c link.c
ln -s src linkdir
ln -s /etc etc-link
ln -s nowhere.c dangling.c
for v in .git .git/objects src/.hg "dir with space/sub/.svn" deep/a/.bzr .jj vendor/pkg/.git; do
	mkdir -p "$v"
	text 950 20 > "$v/a.c"
	text 951 20 > "$v/main.c"
done
printf 'gitdir: foo main\n' > wt/.git
files=$(find . -type f | wc -l)

vcs_prune='-name .git -o -name .hg -o -name .svn -o -name .bzr -o -name .jj'
vcs_excl='--exclude-dir=.git --exclude-dir=.hg --exclude-dir=.svn --exclude-dir=.bzr --exclude-dir=.jj
	--exclude=.git --exclude=.hg --exclude=.svn --exclude=.bzr --exclude=.jj'

# glob_case PATTERN DIR START MINDEPTH MAXDEPTH NAME: ours for PATTERN over DIR (relative to the
# tree) against find START -mindepth MINDEPTH -maxdepth MAXDEPTH -type f -name NAME.
glob_case() {
	globs=$((globs + 1))
	dir=$t; [ "$2" = . ] || dir=$t/$2
	"$ws" glob "$t" "$dir" "$1" > "$tmp/ours" 2>"$tmp/err" || { fail "glob '$1' in $2: $(cat "$tmp/err")"; return; }
	# shellcheck disable=SC2086
	# -mindepth would keep find from pruning above it: the depth is filtered after.
	find "$3" -maxdepth "$5" \( $vcs_prune \) -prune -o -type f -name "$6" -print0 |
		sed -z 's|^\./||' | perl -0 -ne "print if tr{/}{} >= $4 - 1" | sort -z > "$tmp/find"
	cmp -s "$tmp/ours" "$tmp/find" ||
		fail "glob '$1' in $2: $(tr '\0' '\n' < "$tmp/ours" | wc -l) paths, find $(tr '\0' '\n' < "$tmp/find" | wc -l):
$(tr '\0' '\n' < "$tmp/ours" > "$tmp/o"; tr '\0' '\n' < "$tmp/find" > "$tmp/f"; diff "$tmp/o" "$tmp/f" | head -c 300)"
}

# grep -Z records sorted by path, then line number (GNU grep walks in directory order).
sort_hits() {
	perl -0777 -ne 'my @r; while (/\G([^\0]*)\0(\d+):([^\n]*)\n/gc) { push @r, [$1, $2, $3] }
		die "unparsed output\n" if (pos($_) // 0) != length($_);
		print map { "$_->[0]\0$_->[1]:$_->[2]\n" } sort { $a->[0] cmp $b->[0] or $a->[1] <=> $b->[1] } @r'
}

# grep_case PATTERN [INCLUDE]: ours over the tree against grep -rnEI.
grep_case() {
	greps=$((greps + 1))
	if [ $# -gt 1 ]; then
		"$ws" grep "$t" "$t" "$1" "$2" > "$tmp/ours" 2>"$tmp/err" || { fail "grep '$1': $(cat "$tmp/err")"; return; }
		# --include first: when no option matches a file, the first one decides (grep(1)).
		# shellcheck disable=SC2086
		grep -rnEIZ --include="$2" $vcs_excl -e "$1" > "$tmp/gnu.raw"
	else
		"$ws" grep "$t" "$t" "$1" > "$tmp/ours" 2>"$tmp/err" || { fail "grep '$1': $(cat "$tmp/err")"; return; }
		# shellcheck disable=SC2086
		grep -rnEIZ $vcs_excl -e "$1" > "$tmp/gnu.raw"
	fi
	[ $? -le 1 ] || { fail "GNU grep failed on '$1'"; return; }
	sort_hits < "$tmp/gnu.raw" > "$tmp/gnu" || { fail "grep '$1': GNU output unparsed"; return; }
	sort_hits < "$tmp/ours" > "$tmp/ours.sorted" || { fail "grep '$1': our output unparsed"; return; }
	cmp -s "$tmp/ours" "$tmp/ours.sorted" || fail "grep '$1': ours is not in path order"
	cmp -s "$tmp/ours.sorted" "$tmp/gnu" ||
		fail "grep '$1' ${2:-}: $(wc -l < "$tmp/ours") lines, GNU grep $(wc -l < "$tmp/gnu"): $(diff -a "$tmp/ours.sorted" "$tmp/gnu" | tr '\0' '|' | head -c 300)"
}

glob_case '*.c' . . 0 99 '*.c'
glob_case '**/*.c' . . 0 99 '*.c'
glob_case '*' . . 0 99 '*'
glob_case '**' . . 0 99 '*'
glob_case '*.h' . . 0 99 '*.h'
glob_case '.*' . . 0 99 '.*'
glob_case '* *' . . 0 99 '* *'
glob_case "*$(printf '\303\251')*" . . 0 99 "*$(printf '\303\251')*"
glob_case '*[0-9x]*' . . 0 99 '*[0-9x]*'
glob_case '\*.c' . . 0 99 '\*.c'
glob_case 'src/**/*.c' . src 0 99 '*.c'
glob_case 'src/**' . src 0 99 '*'
glob_case 'deep/**/*.h' . deep 0 99 '*.h'
glob_case '*' src src 0 99 '*'
glob_case '**/*.c' 'dir with space' 'dir with space' 0 99 '*.c'
glob_case '*/main.c' . . 2 2 'main.c'
glob_case '*/*/*' . . 3 3 '*'
glob_case 'dir with space/*' . 'dir with space' 1 1 '*'
glob_case '*.rs' . . 0 99 '*.rs'
for p in foo main 'x y' "caf$(printf '\303\251')" a.c '' 'int x;' '();' '{}' 'z {' '[{]}' \
	'^int' 'foo$' '[0-9]+' 'ab?c' '(foo|bar) baz' '^$' 'a\.c' '\<main\>' 'st(atic|ruct)' \
	'^[a-z]+ [a-z]+$' 'x*' '^	' '  ' 'ba[rz]{2}' '(ab)+c' 'o\s+b' '[[:upper:]]' 'ma.n\(' '(^| )42( |$)'; do
	grep_case "$p"
done
grep_case main '*.c'
grep_case foo '*.h'
grep_case 'in+t' "*$(printf '\303\251')*"
grep_case foo '.*'

# A file as the path: grep -nH on that one file.
greps=$((greps + 1))
"$ws" grep "$t" "$t/src/lib/main.c" 'foo|main' > "$tmp/ours" 2>"$tmp/err" || fail "grep on a file: $(cat "$tmp/err")"
grep -nHEZ -e 'foo|main' src/lib/main.c > "$tmp/gnu"
cmp -s "$tmp/ours" "$tmp/gnu" || fail "grep on a file: $(diff -a "$tmp/ours" "$tmp/gnu" | tr '\0' '|' | head -c 300)"

if [ $fails -gt 0 ]; then
	echo "search_diff: $fails FAILED of $((globs + greps))"
	exit 1
fi
echo "search_diff: ok ($globs glob patterns against find, $greps grep patterns against GNU grep -rnEI, on $files files with spaces, UTF-8, newlines, symlinks, binaries, a FIFO and nested VCS dirs)"
