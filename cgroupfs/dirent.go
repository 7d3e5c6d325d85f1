package cgroupfs

import (
	"bytes"
	"encoding/binary"
)

// direntHeader is the size of the fixed part of struct linux_dirent64, as
// getdents64 fills it: d_ino (8 bytes), d_off (8), d_reclen (2), d_type
// (1), then the NUL-terminated name.
const direntHeader = 19

// Directory entry types from d_type.
const (
	dtUnknown = 0
	dtDir     = 4
)

// nextDirent returns the first record in b, as filled by getdents64: the
// entry's name without its NUL, its d_type, and the records after it. ok is
// false when b does not start with a whole record, which ends the batch.
// The name aliases b. It allocates nothing.
func nextDirent(b []byte) (name []byte, typ uint8, rest []byte, ok bool) {
	if len(b) < direntHeader {
		return nil, 0, nil, false
	}
	reclen := int(binary.NativeEndian.Uint16(b[16:18]))
	if reclen < direntHeader || reclen > len(b) {
		return nil, 0, nil, false
	}
	name = b[direntHeader:reclen]
	if i := bytes.IndexByte(name, 0); i >= 0 {
		name = name[:i]
	}
	return name, b[18], b[reclen:], true
}

// isDotOrDotDot reports whether name is "." or "..", which every
// directory lists and the walk skips.
func isDotOrDotDot(name []byte) bool {
	return len(name) > 0 && len(name) <= 2 && name[0] == '.' && (len(name) == 1 || name[1] == '.')
}

// appendDirent appends one linux_dirent64 record to b, padded to 8 bytes
// as the kernel does. Tests and fuzz seeds build getdents output with it.
func appendDirent(b []byte, ino uint64, typ uint8, name string) []byte {
	reclen := (direntHeader + len(name) + 1 + 7) &^ 7
	rec := make([]byte, reclen)
	binary.NativeEndian.PutUint64(rec[0:8], ino)
	binary.NativeEndian.PutUint64(rec[8:16], uint64(len(b)+reclen))
	binary.NativeEndian.PutUint16(rec[16:18], uint16(reclen))
	rec[18] = typ
	copy(rec[direntHeader:], name)
	return append(b, rec...)
}
