package state

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"golang.org/x/sys/unix"
)

// WriteFile replaces the file at path with b atomically: b goes to a new
// file in the same directory, which is synced, renamed over path, and the
// directory synced, so that a crash at any moment leaves either the old
// file or the new one whole.
func WriteFile(path string, b []byte) (err error) {
	dir, base := filepath.Split(path)
	if dir == "" {
		dir = "."
	}
	f, err := os.CreateTemp(dir, "."+base+".tmp-*")
	if err != nil {
		return err
	}
	tmp := f.Name()
	defer func() {
		if err != nil {
			f.Close()
			os.Remove(tmp)
		}
	}()
	if _, err = f.Write(b); err != nil {
		return err
	}
	if err = f.Sync(); err != nil {
		return err
	}
	if err = f.Close(); err != nil {
		return err
	}
	if err = os.Rename(tmp, path); err != nil {
		return err
	}
	return syncDir(dir)
}

func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	defer d.Close()
	if err := d.Sync(); err != nil && !errors.Is(err, unix.EINVAL) {
		return err
	}
	return nil
}

// ReadFile reads a state file, refusing one larger than MaxFileSize
// without reading it all.
func ReadFile(path string) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	b, err := io.ReadAll(io.LimitReader(f, MaxFileSize+1))
	if err != nil {
		return nil, err
	}
	if len(b) > MaxFileSize {
		return nil, fmt.Errorf("%w: %s is larger than %d bytes", ErrCorrupt, path, MaxFileSize)
	}
	return b, nil
}

// BootID reads the boot id from the procfs mounted at procfs.
func BootID(procfs string) (string, error) {
	b, err := os.ReadFile(filepath.Join(procfs, "sys/kernel/random/boot_id"))
	if err != nil {
		return "", err
	}
	id := strings.TrimSpace(string(b))
	if id == "" {
		return "", fmt.Errorf("%s/sys/kernel/random/boot_id is empty", procfs)
	}
	return id, nil
}

// Inode returns the inode number of the file or directory at path.
func Inode(path string) (uint64, error) {
	var st unix.Stat_t
	if err := unix.Stat(path, &st); err != nil {
		return 0, &os.PathError{Op: "stat", Path: path, Err: err}
	}
	return st.Ino, nil
}

// ErrLocked is returned by Lock when another process holds the lock.
var ErrLocked = errors.New("state file in use by another process")

// Lock takes an exclusive lock on path+".lock", made if missing, for the
// life of the returned file: two daemons never share one state file. The
// kernel drops the lock when the process ends, however it ends.
func Lock(path string) (*os.File, error) {
	f, err := os.OpenFile(path+".lock", os.O_RDWR|os.O_CREATE|unix.O_CLOEXEC, 0o600)
	if err != nil {
		return nil, err
	}
	if err := unix.Flock(int(f.Fd()), unix.LOCK_EX|unix.LOCK_NB); err != nil {
		f.Close()
		if errors.Is(err, unix.EWOULDBLOCK) {
			return nil, fmt.Errorf("%s.lock: %w", path, ErrLocked)
		}
		return nil, fmt.Errorf("lock %s.lock: %w", path, err)
	}
	return f, nil
}
