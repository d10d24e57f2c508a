/* innet: P4_16 core library.
 *
 * Written for innet's embedded target. It declares the same names and signatures as
 * p4c's p4include/core.p4 so that any program including it also compiles with p4c.
 */

#ifndef _CORE_P4_
#define _CORE_P4_

/* Built-in error codes; programs may add their own with further `error { ... }`. */
error {
    NoError,
    PacketTooShort,
    NoMatch,
    StackOutOfBounds,
    HeaderTooShort,
    ParserTimeout,
    ParserInvalidArgument
}

/* The packet being parsed. */
extern packet_in {
    /* Extract a fixed-size header and move the cursor past it. */
    void extract<T>(out T hdr);
    /* Extract a header with exactly one varbit field of the given size. */
    void extract<T>(out T variableSizeHeader, in bit<32> variableFieldSizeInBits);
    /* Read (without consuming) a value of type T at the cursor. */
    T lookahead<T>();
    /* Skip bits. */
    void advance(in bit<32> sizeInBits);
    /* Total packet length in bytes. */
    bit<32> length();
}

/* The packet being built by a deparser. */
extern packet_out {
    /* Append hdr (header, stack, union, or struct of those) when valid. */
    void emit<T>(in T hdr);
}

/* In a parser: when check is false set the error to toSignal and reject. */
extern void verify(in bool check, in error toSignal);

/* The action that does nothing. */
@noWarn("unused")
action NoAction() {}

/* Match kinds every architecture knows. */
match_kind {
    exact,
    ternary,
    lpm
}

/* Compile-time assertion; the result may initialise a constant. */
extern bool static_assert(bool check, string message);
extern bool static_assert(bool check);

#endif  /* _CORE_P4_ */
