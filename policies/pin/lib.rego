# Helpers the pinning checks share. No METADATA and no deny: a library, not a check.
package gpuhost.pin.lib

import data.gpuhost.lib.locate

# status is dpkg's database, which the package facts are read from.
status := "/var/lib/dpkg/status"

# at(p, msg) places msg on the line of dpkg's status file where package p's
# paragraph starts, so that a report points at the package; a package list
# that came from elsewhere has no line, and the message stands alone.
at(p, msg) := locate.at(msg, status, object.get(p, "line", 0))
