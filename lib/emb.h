/*
 * emb.h - libemb for programs outside this tree: the library's layers
 * below the command tools (base, io, tok, nn, st).  Inside lib/ each
 * file includes the header of its own layer and those below it (see
 * lib/README); nothing in lib/ includes this file.
 */
#ifndef EMB_H
#define EMB_H

#include "base/base.h"
#include "io/io.h"
#include "tok/tok.h"
#include "nn/nn.h"
#include "st/st.h"

#endif /* EMB_H */
