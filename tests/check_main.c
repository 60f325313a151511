/* One runner over every suite; CK_RUN_SUITE / CK_RUN_CASE select. */
#include <stdlib.h>

#include "tests/helpers.h"

int
main(void)
{
	SRunner *sr;
	int failed;

	/*
	 * A test waits for its event, never for a time: Check's timeouts are only the bound at which
	 * a hang is called a failure. Its default of 4 s is a time a heavy test (a 16 MB inspect under
	 * ASan beside two CPU hogs) can take, so every bound is 3 times wider and the default 60 s,
	 * unless the caller set them (before the suites are made: they read these at creation).
	 */
	setenv("CK_DEFAULT_TIMEOUT", "60", 0);
	setenv("CK_TIMEOUT_MULTIPLIER", "3", 0);
	sr = srunner_create(base_suite());

	test_log_install();
	srunner_add_suite(sr, reader_suite());
	srunner_add_suite(sr, rpc_suite());
	srunner_add_suite(sr, id_suite());
	srunner_add_suite(sr, log_suite());
	srunner_add_suite(sr, repair_suite());
	srunner_add_suite(sr, corpus_suite());
	srunner_add_suite(sr, index_suite());
	srunner_add_suite(sr, replay_suite());
	srunner_add_suite(sr, toolbox_suite());
	srunner_add_suite(sr, updates_suite());
	srunner_add_suite(sr, agent_suite());
	srunner_add_suite(sr, conv_suite());
	srunner_add_suite(sr, subagent_suite());
	srunner_add_suite(sr, compose_suite());
	srunner_add_suite(sr, git_suite());
	srunner_add_suite(sr, sse_suite());
	srunner_add_suite(sr, openai_suite());
	srunner_add_suite(sr, team_suite());
	srunner_add_suite(sr, toolbox_texts_suite());
	srunner_add_suite(sr, outbound_suite());
	srunner_add_suite(sr, permit_suite());
	srunner_add_suite(sr, workspace_suite());
	srunner_add_suite(sr, search_suite());
	srunner_add_suite(sr, grep_hostile_suite());
	srunner_add_suite(sr, proc_suite());
	srunner_add_suite(sr, mcp_text_suite());
	srunner_add_suite(sr, mcp_suite());
	srunner_add_suite(sr, mcp_http_suite());
	srunner_add_suite(sr, chat_suite());
	srunner_add_suite(sr, record_suite());
	srunner_add_suite(sr, images_suite());
	srunner_run_all(sr, CK_ENV);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
