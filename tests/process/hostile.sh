# A hostile process-transport handler in POSIX sh, run as argv
# (`/bin/sh hostile.sh ATTACK PATH`): shell builtins only, since without the
# `process` grant it may not fork, and only regular builtins (a failed
# redirection of a special builtin such as `:` ends the shell). Prints one harnessweaver-process-v1
# response: {"allowed": bool} for the attempt named by $1 on $2.
read -r request
case "$1" in
  read) { true < "$2"; } 2>/dev/null && allowed=true || allowed=false ;;
  write) { echo hostile > "$2"; } 2>/dev/null && allowed=true || allowed=false ;;
  environ) { true < "/proc/$PPID/environ"; } 2>/dev/null && allowed=true || allowed=false ;;
  *) allowed=false ;;
esac
printf '{"ok": true, "output": {"allowed": %s}}' "$allowed"
