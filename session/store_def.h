/*
 * The struct of a live session (session/store.h): session/ only, and tests. Other folders read a
 * session with store.h's accessors; make lint checks that none includes this.
 */
#ifndef SESSION_STORE_DEF_H
#define SESSION_STORE_DEF_H

#include "session/store.h"

/*
 * A live session keeps no tree per event (docs/decisions.md, "Sessions off the heap"): each event's type code and file offset, and
 * the latest events in a small window. Older events are read back from the file (sess_event_get,
 * struct sess_cursor); what is derived from them (the conversation, team and turn state) is kept
 * up to date by observers as events are appended.
 */
struct sess {
	char id[SESS_ID_LEN + 1];
	json_t *header;		/* owned, immutable */
	size_t nev;		/* events; seq == index */
	unsigned char *types;	/* owned: sess_event_type_code of each event (read without the tree) */
	size_t ctypes;
	off_t *offs;		/* owned: the line offset of each event in the file, then its end */
	size_t nfile;		/* events [0, nfile) are in the file; the rest (a read-only log's
				 * closers) only in the window */
	size_t coffs;
	json_t **win;		/* owned refs: events [win_base, nev) */
	size_t win_base, cwin;
	size_t views;		/* its message/view events: the next one's id is msg-<views + 1> */
	int64_t last_time;	/* the latest event's time (the header's createdAt before any) */
	struct sess_log *log;	/* owned */
	struct sess_store *store;
	int checkpoint;		/* a sync is due at the next pass */
	struct sess_observer *obs;	/* owned; as many as are registered */
	int nobs, cobs;
};

#endif
