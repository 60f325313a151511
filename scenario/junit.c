/*
 * --junit FILE: the results as JUnit XML, the shape CI systems read (Jenkins, GitLab, GitHub
 * actions): <testsuites> holding one <testsuite> with a <testcase> per scenario, a failing one
 * with a <failure> carrying the reason and the diff.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "base/utf8.h"
#include "scenario/internal.h"

/*
 * s as XML 1.0 character data (attr: an attribute value): markup characters escaped,
 * invalid UTF-8 repaired to U+FFFD, and characters XML cannot carry at all (controls other
 * than tab, newline and return; U+FFFE and U+FFFF) written as \xNN or U+FFFD.
 */
static void
scenario_junit_text(FILE *f, const char *s, int attr)
{
	size_t len;
	char *t = utf8_repair(s ? s : "", s ? strlen(s) : 0, &len);

	for (size_t i = 0; i < len; i++) {
		unsigned char c = (unsigned char)t[i];
		if (c == '&')
			fputs("&amp;", f);
		else if (c == '<')
			fputs("&lt;", f);
		else if (c == '>')
			fputs("&gt;", f);
		else if (c == '"' && attr)
			fputs("&quot;", f);
		else if ((c == '\n' || c == '\r' || c == '\t') && attr)
			fprintf(f, "&#%d;", c);
		else if (c < 0x20 && c != '\n' && c != '\r' && c != '\t')
			fprintf(f, "\\x%02x", c);
		else if (c == 0xef && i + 2 < len && (unsigned char)t[i + 1] == 0xbf &&
		    ((unsigned char)t[i + 2] == 0xbe || (unsigned char)t[i + 2] == 0xbf)) {
			fputs("\xef\xbf\xbd", f);
			i += 2;
		} else
			fputc(c, f);
	}
	free(t);
}

/* res[0..n): the results. 0, or -1 when f could not be written. */
int
scenario_junit_write(FILE *f, const struct scenario_result *res, size_t n)
{
	size_t failures = 0;
	double total = 0;
	char stamp[32], host[256] = "localhost";
	time_t now = time(NULL);
	struct tm tm;

	for (size_t i = 0; i < n; i++) {
		failures += !res[i].ok;
		total += res[i].secs;
	}
	gmtime_r(&now, &tm);
	strftime(stamp, sizeof(stamp), "%Y-%m-%dT%H:%M:%S", &tm);
	if (gethostname(host, sizeof(host) - 1) < 0)
		snprintf(host, sizeof(host), "localhost");
	host[sizeof(host) - 1] = '\0';
	fprintf(f, "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n");
	fprintf(f, "<testsuites name=\"acp-agent scenario run\" tests=\"%zu\" failures=\"%zu\" errors=\"0\" "
	    "time=\"%.3f\">\n", n, failures, total);
	fprintf(f, "  <testsuite name=\"scenarios\" tests=\"%zu\" failures=\"%zu\" errors=\"0\" skipped=\"0\" "
	    "time=\"%.3f\" timestamp=\"%s\" hostname=\"", n, failures, total, stamp);
	scenario_junit_text(f, host, 1);
	fprintf(f, "\">\n");
	for (size_t i = 0; i < n; i++) {
		fprintf(f, "    <testcase name=\"");
		scenario_junit_text(f, res[i].name, 1);
		fprintf(f, "\" classname=\"");
		scenario_junit_text(f, res[i].classname, 1);
		fprintf(f, "\" time=\"%.3f\"", res[i].secs);
		if (res[i].ok) {
			fprintf(f, "/>\n");
			continue;
		}
		fprintf(f, ">\n      <failure type=\"%s\" message=\"", res[i].diff ? "snapshot" : "run");
		scenario_junit_text(f, res[i].failure, 1);
		fprintf(f, "\">");
		scenario_junit_text(f, res[i].failure, 0);
		if (res[i].diff) {
			fputs("\n\n", f);
			scenario_junit_text(f, res[i].diff, 0);
		}
		fprintf(f, "</failure>\n    </testcase>\n");
	}
	fprintf(f, "  </testsuite>\n</testsuites>\n");
	return ferror(f) ? -1 : 0;
}
