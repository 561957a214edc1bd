# CUCTX_ADD_CFLAGS(VAR, FLAGS): append to VAR each of FLAGS that the C compiler accepts
# without a warning (so an unknown -W option is dropped rather than breaking -Werror builds).
AC_DEFUN([CUCTX_ADD_CFLAGS], [
  for cuctx_flag in $2; do
    AS_VAR_PUSHDEF([cuctx_cache], [cuctx_cv_cflag_$cuctx_flag])
    AC_CACHE_CHECK([whether $CC accepts $cuctx_flag], [cuctx_cache], [
      cuctx_save_CFLAGS=$CFLAGS
      dnl test the positive form: GCC accepts any -Wno-foo silently
      CFLAGS="$CFLAGS -Werror `echo $cuctx_flag | sed 's/^-Wno-/-W/'`"
      AC_COMPILE_IFELSE([AC_LANG_PROGRAM([], [])], [AS_VAR_SET([cuctx_cache], [yes])], [AS_VAR_SET([cuctx_cache], [no])])
      CFLAGS=$cuctx_save_CFLAGS])
    AS_VAR_IF([cuctx_cache], [yes], [$1="$$1 $cuctx_flag"])
    AS_VAR_POPDEF([cuctx_cache])
  done
])
