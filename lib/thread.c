/* SPDX-License-Identifier: MIT */
/* thread.c - the calling thread's record (thread.h). */
#include "config.h"

#include "thread.h"

CUCTX_TLS struct cuctx_thread cuctx__me;
