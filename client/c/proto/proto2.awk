# Rewrites tickrelay.proto (proto3) as the same messages in proto2 syntax for protoc-c,
# which (1.4.1, Debian 12) refuses proto3 `optional`. The wire format is the same:
# every field keeps its number and type, repeated scalars stay packed; proto2 gives
# every scalar a has_ flag, which the C client needs for the fields whose presence
# means something (Welcome.sealed_tick, Join.resume_from).
/^syntax = "proto3";/ { print "syntax = \"proto2\";"; next }
/^[ \t]*oneof [A-Za-z_]+ \{/ { inoneof = 1; print; next }
inoneof && /^[ \t]*\}/ { inoneof = 0; print; next }
!inoneof && /^[ \t]+[A-Za-z_][A-Za-z0-9_.]* [A-Za-z_][A-Za-z0-9_]* = [0-9]+;/ && $1 != "repeated" && $1 != "optional" && $1 != "option" {
	match($0, /^[ \t]+/)
	print substr($0, 1, RLENGTH) "optional " substr($0, RLENGTH + 1)
	next
}
/^[ \t]+repeated (uint32|uint64|int32|int64|fixed32|fixed64|bool|double|float|sint32|sint64) [a-z_]+ = [0-9]+;/ {
	sub(/;/, " [packed = true];")
	print
	next
}
{ print }
