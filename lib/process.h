/* SPDX-License-Identifier: MIT */
/* process.h - the fork and exit hooks (process.c). */
#ifndef CUCTX_PROCESS_H
#define CUCTX_PROCESS_H

/* Registers the fork and exit hooks; called once, by a successful init. */
void cuctx__process_init(void);

#endif
