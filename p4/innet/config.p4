/*
 * Compile-time sizes of innet.p4; each can be overridden with a #define before the
 * #include of innet.p4 (see tests/*.p4) or with -D on the compiler command line.
 */
#ifndef INNET_CONFIG_P4
#define INNET_CONFIG_P4

/* int32 values per packet: 4, 64, 256, 1024 or 2048 (see repeat.p4; 2048 needs MTU 9000). */
#ifndef INNET_K
#define INNET_K 64
#endif

/* Aggregation slots shared by all jobs; every slot has two copies (VER bit). */
#ifndef INNET_SLOTS
#define INNET_SLOTS 1024
#endif

/* Jobs the counters can tell apart; job ids must be < INNET_MAX_JOBS. */
#ifndef INNET_MAX_JOBS
#define INNET_MAX_JOBS 16
#endif

/* Chunks of K parameters (and momentum values) stored for sgd/momentum jobs. */
#ifndef INNET_PARAM_CHUNKS
#define INNET_PARAM_CHUNKS 4096
#endif

/* Entries of innet_owners: (job, chunk prefix) -> owner; a range of chunks takes up to
 * 2 * 32 prefixes. */
#ifndef INNET_OWNER_ENTRIES
#define INNET_OWNER_ENTRIES 1024
#endif

/* Cells of the per-copy registers: slot s, copy v is cell 2*s + v. */
#define INNET_COPIES (2 * INNET_SLOTS)

#endif
