/*
 * A child's worktree (workspace/git.h, docs/contract.md §24) against real repositories made here:
 * the preconditions and their reasons, the base (the user's tracked edits, else HEAD), the branch
 * name and its fallback, nothing left after a refused creation, the commit and its numbers, the
 * removal (the branch kept with work, deleted without), the worktree added back.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>

#include "base/xmalloc.h"
#include "base/log.h"
#include "tests/helpers.h"
#include "workspace/git.h"

#define ID1 "1a2b3c4d-0000-4000-8000-000000000001"
#define ID2 "1a2b3c4d-0000-4000-8000-000000000002"
#define ID3 "5e6f7a8b-0000-4000-8000-000000000003"
#define ID4 "9c8d7e6f-0000-4000-8000-000000000004"
#define ID5 "0e0e0e0e-0000-4000-8000-000000000005"

/* The commands below name their directory up to four times: fmt takes dir for each %s. */
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wformat-nonliteral"
static void
sh(const char *fmt, const char *dir)
{
	char *cmd = xasprintf(fmt, dir, dir, dir, dir);

	ck_assert_msg(system(cmd) == 0, "%s", cmd);
	free(cmd);
}

/* What a command prints, its first line (owned). */
static char *
sh_out(const char *fmt, const char *dir)
{
	char *cmd = xasprintf(fmt, dir, dir), line[512] = "";
	FILE *p = popen(cmd, "r");

	ck_assert_ptr_nonnull(p);
	if (fgets(line, sizeof(line), p) == NULL)
		line[0] = '\0';
	pclose(p);
	free(cmd);
	line[strcspn(line, "\n")] = '\0';
	return xstrdup(line);
}
#pragma GCC diagnostic pop

static int
exists(const char *path)
{
	struct stat st;

	return lstat(path, &st) == 0;
}

/* The child is published: its claim goes, as subagent_iso.c does. */
static void
claim_published(const char *dir, const char *id, int cl)
{
	char *p = xasprintf("%s/.%s.claim", dir, id);

	ck_assert_int_ge(cl, 0);
	ck_assert(exists(p));
	git_wt_unclaim(dir, id, cl);
	ck_assert(!exists(p));
	free(p);
}

static int
published_none(const char *id, void *arg)
{
	(void)id;
	(void)arg;
	return 0;
}

/* A child id is published when it is arg. */
static int
published_is(const char *id, void *arg)
{
	return strcmp(id, arg) == 0;
}

/* A repository at <root>/repo with one commit: README and src/main.c. */
static void
make_repo(const char *root)
{
	sh("mkdir -p %s/repo/src && cd %s/repo && git init -q && printf 'hello\\n' > README && "
	    "printf 'int main(void) { return 0; }\\n' > src/main.c && git add -A && "
	    "git -c user.name=t -c user.email=t@t commit -q -m first", root);
}

START_TEST(git_probe_refuses_with_its_reason)
{
	char root[64], *repo, *subdir, why[GIT_WHY_MAX], *p;

	test_mkdtemp(root, sizeof(root));
	ck_assert_int_eq(git_wt_probe(root, NULL, &repo, &subdir, why), -1);
	ck_assert_msg(strstr(why, "fatal: not a git repository") == why, "%s", why);
	sh("mkdir -p %s/empty && cd %s/empty && git init -q", root);
	p = xasprintf("%s/empty", root);
	ck_assert_int_eq(git_wt_probe(p, NULL, &repo, &subdir, why), -1);
	ck_assert_str_eq(why, "the repository has no commit yet");
	free(p);
	make_repo(root);
	p = xasprintf("%s/repo/src", root);
	struct git_ctx nogit = { "/nonexistent", NULL, NULL, NULL };
	ck_assert_int_eq(git_wt_probe(p, &nogit, &repo, &subdir, why), -1);
	ck_assert_str_eq(why, "git is not on PATH");
	/* a cancel stops git (its group signalled, it reaped): the call fails, nothing waits */
	atomic_int stop = 1;
	struct git_ctx cancelled = { NULL, &stop, NULL, NULL };
	ck_assert_int_eq(git_wt_probe(p, &cancelled, &repo, &subdir, why), -1);
	ck_assert_int_eq(waitpid(-1, NULL, WNOHANG), -1);	/* no child left behind, not even a zombie */
	ck_assert_int_eq(git_wt_probe(p, NULL, &repo, &subdir, why), 0);
	ck_assert_ptr_nonnull(strstr(repo, "/repo"));
	ck_assert_str_eq(subdir, "src");
	free(repo);
	free(subdir);
	free(p);
	test_rmtree(root);
}
END_TEST

START_TEST(git_worktree_from_the_users_edits_committed_and_removed)
{
	char root[64], *repo, *subdir, why[GIT_WHY_MAX], *ws, *dir, *p, *s;
	struct git_wt wt, wt2;
	struct git_commit c;
	int deleted, cl;

	test_mkdtemp(root, sizeof(root));
	make_repo(root);
	ws = xasprintf("%s/repo/src", root);
	dir = xasprintf("%s/worktrees", root);
	ck_assert_int_eq(git_wt_probe(ws, NULL, &repo, &subdir, why), 0);
	/* a tracked edit and an untracked file: the child sees the first only */
	sh("cd %s/repo && printf 'int main(void) { return 1; }\\n' > src/main.c && printf 'x\\n' > src/new.c", root);
	ck_assert_msg(git_wt_create(ws, repo, subdir, ID1, dir, NULL, &wt, &cl, why) == 0, "%s", why);
	claim_published(dir, ID1, cl);
	ck_assert_str_eq(wt.branch, "acp-agent/1a2b3c4d");
	ck_assert_uint_eq(strlen(wt.base), 40);
	s = sh_out("cd %s/repo && git rev-parse HEAD", root);
	ck_assert_str_ne(wt.base, s);		/* git stash create's commit, not HEAD */
	free(s);
	p = xasprintf("%s/src/main.c", wt.path);
	char *text = test_read_file(p, NULL);
	ck_assert_str_eq(text, "int main(void) { return 1; }\n");
	free(text);
	free(p);
	p = xasprintf("%s/src/new.c", wt.path);
	ck_assert(!exists(p));
	free(p);
	/* the user's tree is untouched: the edit is still there, uncommitted */
	s = sh_out("cd %s/repo && git status --porcelain src/main.c", root);
	ck_assert_str_eq(s, " M src/main.c");
	free(s);
	/* the branch name is taken for the next child with the same first 8 digits: the whole id */
	ck_assert_msg(git_wt_create(ws, repo, subdir, ID2, dir, NULL, &wt2, &cl, why) == 0, "%s", why);
	claim_published(dir, ID2, cl);
	ck_assert_str_eq(wt2.branch, "acp-agent/" ID2);
	/* the child's work: an edit and a new file, committed; the numbers are the branch's */
	sh("cd %s && printf 'one\\ntwo\\n' > src/lib.c && printf 'hello\\nworld\\n' > README", wt.path);
	ck_assert_msg(git_wt_commit(&wt, "add lib", NULL, &c, why) == 0, "%s", why);
	ck_assert_uint_eq(strlen(c.commit), 40);
	ck_assert_int_eq(c.files, 2);
	ck_assert_int_eq(c.insertions, 3);
	ck_assert_int_eq(c.deletions, 0);
	s = sh_out("cd %s && git log -1 --format='%%an <%%ae> %%cn <%%ce> %%s'", wt.path);
	ck_assert_str_eq(s, "acp-agent <acp-agent@localhost> acp-agent <acp-agent@localhost> add lib");
	free(s);
	ck_assert_int_eq(git_wt_remove(&wt, NULL, &deleted, why), 0);
	ck_assert_int_eq(deleted, 0);
	ck_assert(!exists(wt.path));
	s = sh_out("cd %s/repo && git branch --list 'acp-agent/1a2b3c4d'", root);
	ck_assert_str_eq(s, "  acp-agent/1a2b3c4d");
	free(s);
	/* added back on its branch, with its work */
	ck_assert_msg(git_wt_readd(&wt, NULL, why) == 0, "%s", why);
	p = xasprintf("%s/src/lib.c", wt.path);
	ck_assert(exists(p));
	free(p);
	ck_assert_int_eq(git_wt_readd(&wt, NULL, why), 0);	/* there already: ours */
	/* nothing changed in the second: no commit, and its branch goes with it */
	ck_assert_int_eq(git_wt_commit(&wt2, "nothing", NULL, &c, why), 0);
	ck_assert_str_eq(c.commit, "");
	ck_assert_int_eq(c.files, 0);
	ck_assert_int_eq(git_wt_remove(&wt2, NULL, &deleted, why), 0);
	ck_assert_int_eq(deleted, 1);
	ck_assert_int_eq(git_wt_count(&wt2, NULL, &c, why), 0);	/* gone: nothing to count */
	ck_assert_int_eq(c.files, 0);
	/* added back after its branch was deleted: made again from its base */
	ck_assert_msg(git_wt_readd(&wt2, NULL, why) == 0, "%s", why);
	p = xasprintf("%s/src/main.c", wt2.path);
	ck_assert(exists(p));
	free(p);
	/* a label of spaces is still a message; nothing more to commit: no commit id */
	sh("cd %s && printf 'z\n' > src/z.c", wt2.path);
	ck_assert_msg(git_wt_commit(&wt2, "   ", NULL, &c, why) == 0, "%s", why);
	ck_assert_uint_eq(strlen(c.commit), 40);
	ck_assert_int_eq(c.files, 1);
	ck_assert_int_eq(git_wt_commit(&wt2, "again", NULL, &c, why), 0);
	ck_assert_str_eq(c.commit, "");
	ck_assert_int_eq(c.files, 1);		/* the branch's, still */
	ck_assert_int_eq(git_wt_remove(&wt2, NULL, &deleted, why), 0);
	ck_assert_int_eq(deleted, 0);
	s = sh_out("cd %s/repo && git branch --list 'acp-agent/1a2b*' | wc -l", root);
	ck_assert_str_eq(s, "2");
	free(s);
	git_wt_free(&wt);
	git_wt_free(&wt2);
	free(repo);
	free(subdir);
	free(ws);
	free(dir);
	test_rmtree(root);
}
END_TEST

/* A path that is there and not ours, a branch git refuses, a locked index: clear reasons, and
 * nothing of ours left (no branch, no directory). */
START_TEST(git_worktree_refused_leaves_nothing)
{
	char root[64], *repo, *subdir, why[GIT_WHY_MAX], *ws, *dir, *p, *s;
	struct git_wt wt;
	int cl;

	test_mkdtemp(root, sizeof(root));
	make_repo(root);
	ws = xasprintf("%s/repo", root);
	dir = xasprintf("%s/worktrees", root);
	ck_assert_int_eq(git_wt_probe(ws, NULL, &repo, &subdir, why), 0);
	ck_assert_str_eq(subdir, "");
	p = xasprintf("%s/%s", dir, ID3);
	sh("mkdir -p %s/worktrees/" ID3 " && touch %s/worktrees/" ID3 "/mine", root);
	ck_assert_int_eq(git_wt_create(ws, repo, subdir, ID3, dir, NULL, &wt, &cl, why), -1);
	ck_assert_msg(strstr(why, "exists already") != NULL, "%s", why);
	ck_assert_int_eq(cl, -1);
	s = xasprintf("%s/mine", p);
	ck_assert(exists(s));			/* not ours: left alone */
	free(s);
	sh("rm -rf %s/worktrees/" ID3, root);
	/* a locked index: git refuses, and nothing is left */
	sh("cd %s/repo && printf 'x\\n' >> README && touch .git/index.lock", root);
	if (git_wt_create(ws, repo, subdir, ID3, dir, NULL, &wt, &cl, why) < 0) {
		s = xasprintf("%s/." ID3 ".claim", dir);
		ck_assert(!exists(s));			/* its claim went with it */
		free(s);
		/* git's own line, or ours naming the command (git stash create says nothing here) */
		ck_assert_msg(strncmp(why, "fatal: ", 7) == 0 || strncmp(why, "error: ", 7) == 0 ||
		    strcmp(why, "git stash create exited with status 1") == 0, "%s", why);
		ck_assert(!exists(p));
		s = sh_out("cd %s/repo && git branch --list 'acp-agent/*' | wc -l", root);
		ck_assert_str_eq(s, "0");
		free(s);
	} else {
		claim_published(dir, ID3, cl);
		git_wt_free(&wt);	/* this git needs no lock for it: then it must have worked */
	}
	sh("rm -f %s/repo/.git/index.lock", root);
	/* a detached HEAD, a workspace reached through a symlink into the repository: as any */
	sh("cd %s/repo && git checkout -q --detach && ln -s %s/repo/src %s/link", root);
	char *lws = xasprintf("%s/link", root), *lrepo, *lsub;
	ck_assert_int_eq(git_wt_probe(lws, NULL, &lrepo, &lsub, why), 0);
	ck_assert_str_eq(lsub, "src");
	ck_assert_msg(git_wt_create(lws, lrepo, lsub, ID3, dir, NULL, &wt, &cl, why) == 0, "%s", why);
	claim_published(dir, ID3, cl);
	s = xasprintf("%s/src/main.c", wt.path);
	ck_assert(exists(s));
	free(s);
	git_wt_free(&wt);
	free(lws);
	free(lrepo);
	free(lsub);
	/* a workspace directory git tracks nothing in: it is there in the worktree all the same */
	sh("mkdir -p %s/repo/newdir", root);
	char *nws = xasprintf("%s/repo/newdir", root), *nrepo, *nsub;
	ck_assert_int_eq(git_wt_probe(nws, NULL, &nrepo, &nsub, why), 0);
	ck_assert_str_eq(nsub, "newdir");
	ck_assert_msg(git_wt_create(nws, nrepo, nsub, ID2, dir, NULL, &wt, &cl, why) == 0, "%s", why);
	claim_published(dir, ID2, cl);
	s = xasprintf("%s/newdir", wt.path);
	ck_assert(exists(s));
	free(s);
	git_wt_free(&wt);
	free(nws);
	free(nrepo);
	free(nsub);
	free(p);
	free(repo);
	free(subdir);
	free(ws);
	free(dir);
	test_rmtree(root);
}
END_TEST

/* After a crash: a directory with no .git, or whose .git names a git directory that is gone, is
 * removed whole; a worktree git lists stays (its child settles it). */
START_TEST(git_sweep_removes_what_git_does_not_list)
{
	char root[64], *repo, *subdir, why[GIT_WHY_MAX], *ws, *dir, *p;
	struct git_wt wt;
	int cl;

	test_mkdtemp(root, sizeof(root));
	make_repo(root);
	ws = xasprintf("%s/repo", root);
	dir = xasprintf("%s/worktrees", root);
	ck_assert_int_eq(git_wt_probe(ws, NULL, &repo, &subdir, why), 0);
	ck_assert_msg(git_wt_create(ws, repo, subdir, ID1, dir, NULL, &wt, &cl, why) == 0, "%s", why);
	claim_published(dir, ID1, cl);
	sh("mkdir -p %s/worktrees/half/sub %s/worktrees/fresh && touch %s/worktrees/half/sub/f && "
	    "touch -d '2 hours ago' %s/worktrees/half", root);
	sh("mkdir -p %s/worktrees/stale && echo 'gitdir: /nonexistent/.git/worktrees/stale' > %s/worktrees/stale/.git", root);
	test_log_capture_start();
	ck_assert_int_eq(git_wt_sweep(dir, published_none, NULL), 1);
	char *log = test_log_capture_stop();
	ck_assert_ptr_nonnull(strstr(log, "stale: its repository's record of it is gone; left as it is"));
	free(log);
	p = xasprintf("%s/half", dir);
	ck_assert(!exists(p));			/* never finished, an hour old: gone */
	free(p);
	p = xasprintf("%s/fresh", dir);
	ck_assert(exists(p));			/* maybe being made by another process */
	free(p);
	p = xasprintf("%s/stale", dir);
	ck_assert(exists(p));			/* may hold work */
	free(p);
	ck_assert(exists(wt.path));
	git_wt_free(&wt);
	free(repo);
	free(subdir);
	free(ws);
	free(dir);
	test_rmtree(root);
}
END_TEST

/* A process that dies between the worktree's add and its child's first log line leaves a claim
 * nobody holds: the sweep removes the worktree, git's record and the untouched branch. A claim
 * still held (its process lives), or whose child was published, leaves the worktree alone. */
START_TEST(git_sweep_undoes_a_worktree_whose_child_never_started)
{
	char root[64], *repo, *subdir, why[GIT_WHY_MAX], *ws, *dir, *p, *s;
	struct git_wt dead, moved, live, pub;
	int cdead, cmoved, clive, cpub;

	test_mkdtemp(root, sizeof(root));
	make_repo(root);
	ws = xasprintf("%s/repo", root);
	dir = xasprintf("%s/worktrees", root);
	ck_assert_int_eq(git_wt_probe(ws, NULL, &repo, &subdir, why), 0);
	ck_assert_msg(git_wt_create(ws, repo, subdir, ID1, dir, NULL, &dead, &cdead, why) == 0, "%s", why);
	ck_assert_msg(git_wt_create(ws, repo, subdir, ID2, dir, NULL, &moved, &cmoved, why) == 0, "%s", why);
	ck_assert_msg(git_wt_create(ws, repo, subdir, ID3, dir, NULL, &live, &clive, why) == 0, "%s", why);
	ck_assert_msg(git_wt_create(ws, repo, subdir, ID4, dir, NULL, &pub, &cpub, why) == 0, "%s", why);
	/* someone committed on the second's branch: not ours to delete any more */
	sh("cd %s && echo x > extra && git add extra && git -c user.name=u -c user.email=u@u commit -q -m extra",
	    moved.path);
	close(cdead);		/* their process died: the kernel lets go of the locks */
	close(cmoved);
	close(cpub);
	/* a claim named by an id whose text is not a claim's: warned about, left; names not of ours
	 * (".." and the like would name the directory itself) and a stale temporary one */
	sh("printf 'repo\nacp-agent/x\nnothex\n' > %s/worktrees/." ID5 ".claim && printf '/r\nacp-agent/x\n"
	    "0123456789012345678901234567890123456789\n' > %s/worktrees/....claim && touch %s/worktrees/.garbage.claim "
	    "%s/worktrees/." ID5 ".claim.tmp", root);
	char pub_id[] = ID4;
	test_log_capture_start();
	log_set_level(LOG_INFO);
	ck_assert_int_eq(git_wt_sweep(dir, published_is, pub_id), 2);
	log_set_level(LOG_WARN);
	char *log = test_log_capture_stop();
	ck_assert_msg(strstr(log, ID1 ": made for a child that never started; removed") != NULL, "%s", log);
	ck_assert_ptr_nonnull(strstr(log, "." ID5 ".claim: not a claim of ours; left as it is"));
	free(log);
	ck_assert(!exists(dead.path));
	ck_assert(!exists(moved.path));
	s = sh_out("cd %s/repo && git branch --list 'acp-agent/*' | tr -d ' *+' | tr '\\n' ' '", root);
	/* the dead one's branch gone; the moved one's kept; the live and published ones' there */
	ck_assert_str_eq(s, "acp-agent/" ID2 " acp-agent/5e6f7a8b acp-agent/9c8d7e6f ");
	free(s);
	s = sh_out("cd %s/repo && git worktree list --porcelain | grep -c '^worktree '", root);
	ck_assert_str_eq(s, "3");		/* the repository, the live one, the published one */
	free(s);
	ck_assert(exists(live.path));
	ck_assert(exists(pub.path));
	p = xasprintf("%s/." ID3 ".claim", dir);
	ck_assert(exists(p));			/* held: its process is making it now */
	free(p);
	p = xasprintf("%s/." ID4 ".claim", dir);
	ck_assert(!exists(p));			/* its child's log owns the worktree */
	free(p);
	p = xasprintf("%s/." ID1 ".claim", dir);
	ck_assert(!exists(p));
	free(p);
	p = xasprintf("%s/." ID5 ".claim", dir);
	ck_assert(exists(p));
	free(p);
	p = xasprintf("%s/.garbage.claim", dir);
	ck_assert(exists(p));
	free(p);
	p = xasprintf("%s/....claim", dir);
	ck_assert(exists(p));
	free(p);
	ck_assert(exists(dir));
	p = xasprintf("%s/." ID5 ".claim.tmp", dir);
	ck_assert(!exists(p));			/* nobody holds it: a dead process's */
	free(p);
	git_wt_unclaim(dir, ID3, clive);
	git_wt_free(&dead);
	git_wt_free(&moved);
	git_wt_free(&live);
	git_wt_free(&pub);
	free(repo);
	free(subdir);
	free(ws);
	free(dir);
	test_rmtree(root);
}
END_TEST

/* A git killed mid-commit (the agent SIGKILLed) leaves its lock files: the recovering settlement
 * removes them (the worktree's index and HEAD, the branch's ref), and the commit goes through. */
START_TEST(git_unlock_removes_what_a_killed_git_left)
{
	char root[64], *repo, *subdir, why[GIT_WHY_MAX], *ws, *dir;
	struct git_wt wt;
	struct git_commit c;
	int cl;

	test_mkdtemp(root, sizeof(root));
	make_repo(root);
	ws = xasprintf("%s/repo", root);
	dir = xasprintf("%s/worktrees", root);
	ck_assert_int_eq(git_wt_probe(ws, NULL, &repo, &subdir, why), 0);
	ck_assert_msg(git_wt_create(ws, repo, subdir, ID1, dir, NULL, &wt, &cl, why) == 0, "%s", why);
	claim_published(dir, ID1, cl);
	sh("cd %s/worktrees/" ID1 " && echo new > new.txt && touch \"$(git rev-parse --git-dir)/index.lock\" "
	    "\"$(git rev-parse --git-dir)/HEAD.lock\" \"$(git rev-parse --git-common-dir)/refs/heads/acp-agent/1a2b3c4d.lock\"", root);
	ck_assert_int_eq(git_wt_commit(&wt, "w", NULL, &c, why), -1);	/* git refuses: the locks */
	test_log_capture_start();
	ck_assert_int_eq(git_wt_unlock(&wt), 3);
	char *log = test_log_capture_stop();
	ck_assert_ptr_nonnull(strstr(log, "HEAD.lock, left by a git that was killed"));
	free(log);
	ck_assert_msg(git_wt_commit(&wt, "w", NULL, &c, why) == 0, "%s", why);
	ck_assert_int_eq(c.files, 1);
	ck_assert_int_eq(git_wt_unlock(&wt), 0);	/* nothing left to remove */
	git_wt_free(&wt);
	free(repo);
	free(subdir);
	free(ws);
	free(dir);
	test_rmtree(root);
}
END_TEST

Suite *
git_suite(void)
{
	Suite *s = suite_create("git");
	TCase *tc = tcase_create("git");

	tcase_set_timeout(tc, 60);
	tcase_add_test(tc, git_probe_refuses_with_its_reason);
	tcase_add_test(tc, git_worktree_from_the_users_edits_committed_and_removed);
	tcase_add_test(tc, git_worktree_refused_leaves_nothing);
	tcase_add_test(tc, git_sweep_removes_what_git_does_not_list);
	tcase_add_test(tc, git_sweep_undoes_a_worktree_whose_child_never_started);
	tcase_add_test(tc, git_unlock_removes_what_a_killed_git_left);
	suite_add_tcase(s, tc);
	return s;
}
