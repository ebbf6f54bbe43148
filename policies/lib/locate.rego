# Where a finding points, for the checks of every domain. No METADATA and no
# deny: a library, not a check.
package gpuhost.lib.locate

# at(msg, file, line) places msg on a line of a file in the target, so that
# a report points at the line to change (SARIF's region.startLine). A fact
# that no line of a file decided (a default, what a running kernel holds, a
# document saved before lines were kept) has line 0: the message then stands
# alone, and the report points at the check's location.
at(msg, file, line) := {"msg": msg, "file": file, "line": line} if line > 0

else := msg

# place(file, line) is what a finding object that names a subject as well
# adds to say where it is: the file and line, or nothing when line is 0.
place(file, line) := {"file": file, "line": line} if line > 0

else := {}
