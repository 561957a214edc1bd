# SPDX-License-Identifier: MIT
# CUCTX_CHECK_CUDA: finds the CUDA headers cuctx is built against: cuda.h and
# cudaTypedefs.h of CUDA 12.0 or newer (cuGetProcAddress_v2 and the PFN_*_v*
# typedefs cuctx pins are all present from there on).
#
# Where: --with-cuda=DIR if given; else the compiler's own view (CPPFLAGS and
# its default include path: a toolkit installed in /usr, or CPPFLAGS=-I...),
# then $CUDA_HOME, $CUDA_PATH and /usr/local/cuda. Stops configure when none
# has them.
#
# Sets and substitutes CUDA_DIR (the toolkit, when known), CUDA_INCDIR (the
# directory of cuda.h, when known) and CUDA_CPPFLAGS (-I that directory, or
# empty for a system directory), and CUDA_PC_CFLAGS for cuctx.pc.
AC_DEFUN([CUCTX_CHECK_CUDA], [
AC_REQUIRE([AC_PROG_CPP])
AC_ARG_WITH([cuda],
  [AS_HELP_STRING([--with-cuda=DIR], [CUDA toolkit with include/cuda.h (default: the compiler's include path and CPPFLAGS, then $CUDA_HOME, $CUDA_PATH, /usr/local/cuda)])],
  [cuda_dirs="$withval"], [cuda_dirs=yes])
AS_CASE([$cuda_dirs],
  [no], [AC_MSG_ERROR([cuctx cannot be built without the CUDA headers (--without-cuda given)])],
  [yes], [cuda_dirs="@compiler ${CUDA_HOME:+$CUDA_HOME }${CUDA_PATH:+$CUDA_PATH }/usr/local/cuda"])
CUDA_DIR=
CUDA_INCDIR=
CUDA_CPPFLAGS=
cuda_found=no
cuda_tried=
cuda_sep=
for d in $cuda_dirs; do
  AS_IF([test "x$d" = x@compiler],
    [cuda_flags=; cuda_where="the compiler's include path and CPPFLAGS"],
    [cuda_flags="-I$d/include"; cuda_where="$d/include"])
  cuda_tried="$cuda_tried$cuda_sep$cuda_where"; cuda_sep="; "
  AC_MSG_CHECKING([for cuda.h of CUDA 12.0 or newer in $cuda_where])
  # As the Makefile orders them: CUDA_CPPFLAGS (in AM_CPPFLAGS) before CPPFLAGS.
  cuda_save_CPPFLAGS=$CPPFLAGS; CPPFLAGS="$cuda_flags $CPPFLAGS"
  AC_PREPROC_IFELSE([AC_LANG_SOURCE([[#include <cuda.h>
#include <cudaTypedefs.h>]])],
    [AC_COMPILE_IFELSE([AC_LANG_PROGRAM([[#include <cuda.h>
#include <cudaTypedefs.h>
#if CUDA_VERSION < 12000
#error too old
#endif]], [[PFN_cuGetProcAddress_v12000 f = 0; (void)f;]])],
      [cuda_found=yes], [cuda_found="no (older than 12.0)"])],
    [cuda_found=no])
  cuda_h=
  AS_IF([test "$cuda_found" = yes && test -z "$cuda_flags"],
    [# The header the preprocessor took, from its line markers.
     cuda_h=`echo '#include <cuda.h>' | $CPP $CPPFLAGS - 2>/dev/null | sed -n 's|^# *1 "\(.*/cuda\.h\)".*|\1|p' | sed 1q`])
  CPPFLAGS=$cuda_save_CPPFLAGS
  AC_MSG_RESULT([$cuda_found])
  AS_IF([test "$cuda_found" = yes], [
    CUDA_CPPFLAGS=$cuda_flags
    AS_IF([test -n "$cuda_flags"], [CUDA_INCDIR=$d/include; CUDA_DIR=$d],
      [test -n "$cuda_h"], [CUDA_INCDIR=`AS_DIRNAME(["$cuda_h"])`; CUDA_DIR=`AS_DIRNAME(["$CUDA_INCDIR"])`])
    # Named in CUDA_CPPFLAGS too (the same header), for the test scripts and
    # the tools that do not see CPPFLAGS; a system directory is left out.
    AS_IF([test -z "$cuda_flags" && test -n "$CUDA_INCDIR" && test "$CUDA_INCDIR" != /usr/include],
      [CUDA_CPPFLAGS="-I$CUDA_INCDIR"])
    break])
  cuda_tried="$cuda_tried: $cuda_found"
done
AS_IF([test "$cuda_found" != yes],
  [AC_MSG_ERROR([no cuda.h and cudaTypedefs.h of CUDA 12.0 or newer found; tried $cuda_tried. Install the CUDA toolkit 12.0 or newer, or point configure at it with --with-cuda=DIR or CPPFLAGS=-IDIR/include.])])
AC_SUBST([CUDA_DIR])
AC_SUBST([CUDA_INCDIR])
AC_SUBST([CUDA_CPPFLAGS])
CUDA_PC_CFLAGS=$CUDA_CPPFLAGS
AC_SUBST([CUDA_PC_CFLAGS])
])
