/*
 * Value repetition for innet.p4: INNET_FOR_EACH(X) expands to X(0) X(1) ... X(INNET_K - 1),
 * so per-element code (header fields, registers, the add and optimizer steps) is written
 * once as a macro of the element index and pasted for every element. Indexes are plain
 * decimal tokens, so names pasted with ## read v0, v1, ..., innet_acc_63.
 *
 * Indexes are built from decimal prefixes: INNET_TENS(X, p) is X(p0) .. X(p9) and
 * INNET_HUNDREDS(X, p) is X(p00) .. X(p99); an empty prefix would give leading zeros
 * (X(00)), so 0 .. 99 has its own INNET_FIRST_HUNDRED. INNET_THOUSAND(X, p) is X(p000) ..
 * X(p999) for a non-empty prefix p, and INNET_FIRST_THOUSAND(X) is X(0) .. X(999).
 */
#ifndef INNET_REPEAT_P4
#define INNET_REPEAT_P4

#define INNET_TENS(X, p) \
    X(p##0) X(p##1) X(p##2) X(p##3) X(p##4) X(p##5) X(p##6) X(p##7) X(p##8) X(p##9)

#define INNET_HUNDREDS(X, p) \
    INNET_TENS(X, p##0) INNET_TENS(X, p##1) INNET_TENS(X, p##2) INNET_TENS(X, p##3) \
    INNET_TENS(X, p##4) INNET_TENS(X, p##5) INNET_TENS(X, p##6) INNET_TENS(X, p##7) \
    INNET_TENS(X, p##8) INNET_TENS(X, p##9)

#define INNET_FIRST_HUNDRED(X) \
    INNET_TENS(X, ) INNET_TENS(X, 1) INNET_TENS(X, 2) INNET_TENS(X, 3) INNET_TENS(X, 4) \
    INNET_TENS(X, 5) INNET_TENS(X, 6) INNET_TENS(X, 7) INNET_TENS(X, 8) INNET_TENS(X, 9)

#define INNET_THOUSAND(X, p) \
    INNET_HUNDREDS(X, p##0) INNET_HUNDREDS(X, p##1) INNET_HUNDREDS(X, p##2) \
    INNET_HUNDREDS(X, p##3) INNET_HUNDREDS(X, p##4) INNET_HUNDREDS(X, p##5) \
    INNET_HUNDREDS(X, p##6) INNET_HUNDREDS(X, p##7) INNET_HUNDREDS(X, p##8) \
    INNET_HUNDREDS(X, p##9)

#define INNET_FIRST_THOUSAND(X) \
    INNET_FIRST_HUNDRED(X) INNET_HUNDREDS(X, 1) INNET_HUNDREDS(X, 2) INNET_HUNDREDS(X, 3) \
    INNET_HUNDREDS(X, 4) INNET_HUNDREDS(X, 5) INNET_HUNDREDS(X, 6) INNET_HUNDREDS(X, 7) \
    INNET_HUNDREDS(X, 8) INNET_HUNDREDS(X, 9)

#if INNET_K == 4
#define INNET_FOR_EACH(X) X(0) X(1) X(2) X(3)
#elif INNET_K == 64
#define INNET_FOR_EACH(X) \
    INNET_TENS(X, ) INNET_TENS(X, 1) INNET_TENS(X, 2) INNET_TENS(X, 3) INNET_TENS(X, 4) \
    INNET_TENS(X, 5) X(60) X(61) X(62) X(63)
#elif INNET_K == 256
#define INNET_FOR_EACH(X) \
    INNET_FIRST_HUNDRED(X) INNET_HUNDREDS(X, 1) \
    INNET_TENS(X, 20) INNET_TENS(X, 21) INNET_TENS(X, 22) INNET_TENS(X, 23) INNET_TENS(X, 24) \
    X(250) X(251) X(252) X(253) X(254) X(255)
#elif INNET_K == 1024
#define INNET_FOR_EACH(X) \
    INNET_FIRST_HUNDRED(X) INNET_HUNDREDS(X, 1) INNET_HUNDREDS(X, 2) INNET_HUNDREDS(X, 3) \
    INNET_HUNDREDS(X, 4) INNET_HUNDREDS(X, 5) INNET_HUNDREDS(X, 6) INNET_HUNDREDS(X, 7) \
    INNET_HUNDREDS(X, 8) INNET_HUNDREDS(X, 9) INNET_TENS(X, 100) INNET_TENS(X, 101) \
    X(1020) X(1021) X(1022) X(1023)
#elif INNET_K == 2048
/* 2048 values: 8 KiB of values plus headers, a 9000-byte MTU's jumbo frame */
#define INNET_FOR_EACH(X) \
    INNET_FIRST_THOUSAND(X) INNET_THOUSAND(X, 1) \
    INNET_TENS(X, 200) INNET_TENS(X, 201) INNET_TENS(X, 202) INNET_TENS(X, 203) \
    X(2040) X(2041) X(2042) X(2043) X(2044) X(2045) X(2046) X(2047)
#else
#error "INNET_K must be 4, 64, 256, 1024 or 2048"
#endif

#endif
