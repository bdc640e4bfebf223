/*
 * io/numfmt.h - the oracle of io.h's float formatter (numfmt.c), for the
 * tests and bench/fmt-f32-all.
 * Layer io: includes base only.
 */
#ifndef EMB_IO_NUMFMT_H
#define EMB_IO_NUMFMT_H

#include <stddef.h>

/* emb_fmt_f32's first implementation (double arithmetic, printf and
 * strtof where it cannot decide): the same bytes, slower */
size_t emb_fmt_f32_ref(char *out, float v);

#endif
