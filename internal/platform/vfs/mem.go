package vfs

import (
	"io"
	"io/fs"
	"maps"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"time"
)

// DefaultMemFreeBytes is what MemFS.FreeBytes reports until SetFreeBytes:
// far above any free-space floor, so tests opt in to a full disk.
const DefaultMemFreeBytes = 1 << 40

// DefaultMemTotalBytes is what MemFS.TotalBytes reports until
// SetTotalBytes.
const DefaultMemTotalBytes = 1 << 44

// WriteHook is consulted before every write to a MemFS file. It returns how
// many bytes of p to write and the error to return; when err is nil all of p
// is written whatever n says. It runs with the MemFS lock held, so it must
// not call back into the MemFS.
type WriteHook func(name string, p []byte) (n int, err error)

// FailAfter returns a WriteHook that lets limit bytes through, in total over
// all files, and then fails every write with err (a torn write: the bytes up
// to the limit land). FailAfter(n, syscall.ENOSPC) is a disk that fills up.
func FailAfter(limit int64, err error) WriteHook {
	var written int64 // owned by the hook, which runs under the MemFS lock
	return func(_ string, p []byte) (int, error) {
		room := limit - written
		if room >= int64(len(p)) {
			written += int64(len(p))
			return len(p), nil
		}
		room = max(room, 0)
		written += room
		return int(room), err
	}
}

// MemFS is an in-memory FS that remembers what is durable (see the package
// doc). The zero value is not usable; call NewMemFS.
type MemFS struct {
	mu    sync.Mutex // guards everything below and every memNode reachable from root
	root  *memNode
	hook  WriteHook
	free  uint64
	total uint64
}

var _ FS = (*MemFS)(nil)

// memNode is a file or a directory (an inode).
type memNode struct {
	dir bool
	// file content: data is what reads see, synced what the last Sync saw.
	data, synced []byte
	// directory entries: children is what lookups see, durable what the
	// last SyncDir saw.
	children, durable map[string]*memNode
	modTime           time.Time
}

func newDir() *memNode {
	return &memNode{dir: true, children: map[string]*memNode{}, durable: map[string]*memNode{}}
}

// NewMemFS returns an empty MemFS whose root directory exists and is durable.
func NewMemFS() *MemFS {
	return &MemFS{root: newDir(), free: DefaultMemFreeBytes, total: DefaultMemTotalBytes}
}

// SetWriteHook installs h (nil removes it).
func (m *MemFS) SetWriteHook(h WriteHook) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.hook = h
}

// SetFreeBytes sets what FreeBytes reports.
func (m *MemFS) SetFreeBytes(n uint64) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.free = n
}

// SetTotalBytes sets what TotalBytes reports.
func (m *MemFS) SetTotalBytes(n uint64) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.total = n
}

// Crash returns the filesystem as a power loss now would leave it: only
// directory entries made durable by SyncDir, holding only data made durable
// by Sync. The receiver is unchanged; the result shares nothing with it.
func (m *MemFS) Crash() *MemFS {
	return m.crash(func(synced, _ []byte) []byte { return slices.Clone(synced) })
}

// CrashKeep is Crash where part of the unsynced data may survive, as on a
// real disk: for a file only appended to since its last Sync, keep(extra)
// chooses how many of the extra bytes (0..extra) survive; other unsynced
// changes are lost. Use it with a seeded random source to find torn tails.
func (m *MemFS) CrashKeep(keep func(extra int) int) *MemFS {
	return m.crash(func(synced, data []byte) []byte {
		if len(data) <= len(synced) || !slices.Equal(data[:len(synced)], synced) {
			return slices.Clone(synced)
		}
		n := min(max(keep(len(data)-len(synced)), 0), len(data)-len(synced))
		return slices.Clone(data[:len(synced)+n])
	})
}

func (m *MemFS) crash(content func(synced, data []byte) []byte) *MemFS {
	m.mu.Lock()
	defer m.mu.Unlock()
	var clone func(n *memNode) *memNode
	clone = func(n *memNode) *memNode {
		if !n.dir {
			d := content(n.synced, n.data)
			return &memNode{data: d, synced: slices.Clone(d), modTime: n.modTime}
		}
		c := newDir()
		for name, child := range n.durable {
			cc := clone(child)
			c.children[name] = cc
			c.durable[name] = cc
		}
		return c
	}
	return &MemFS{root: clone(m.root), free: m.free, total: m.total}
}

// split turns a name into path elements below the root.
func split(name string) []string {
	p := path.Clean("/" + filepath.ToSlash(name))
	if p == "/" {
		return nil
	}
	return strings.Split(p[1:], "/")
}

func pathErr(op, name string, err error) error { return &fs.PathError{Op: op, Path: name, Err: err} }

// lookupLocked finds the node at name.
func (m *MemFS) lookupLocked(op, name string) (*memNode, error) {
	n := m.root
	for _, e := range split(name) {
		if !n.dir {
			return nil, pathErr(op, name, syscall.ENOTDIR)
		}
		c, ok := n.children[e]
		if !ok {
			return nil, pathErr(op, name, fs.ErrNotExist)
		}
		n = c
	}
	return n, nil
}

// parentLocked finds the directory holding name and name's last element.
func (m *MemFS) parentLocked(op, name string) (*memNode, string, error) {
	parts := split(name)
	if len(parts) == 0 {
		return nil, "", pathErr(op, name, fs.ErrInvalid)
	}
	dir, err := m.lookupLocked(op, strings.Join(parts[:len(parts)-1], "/"))
	if err != nil {
		return nil, "", err
	}
	if !dir.dir {
		return nil, "", pathErr(op, name, syscall.ENOTDIR)
	}
	return dir, parts[len(parts)-1], nil
}

// Create implements FS.
func (m *MemFS) Create(name string) (File, error) {
	return m.OpenFile(name, os.O_RDWR|os.O_CREATE|os.O_TRUNC, 0o666)
}

// Open implements FS.
func (m *MemFS) Open(name string) (File, error) { return m.OpenFile(name, os.O_RDONLY, 0) }

// OpenFile implements FS for the flags O_RDONLY, O_WRONLY, O_RDWR, O_APPEND,
// O_CREATE, O_EXCL and O_TRUNC.
func (m *MemFS) OpenFile(name string, flag int, _ fs.FileMode) (File, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	dir, base, err := m.parentLocked("open", name)
	if err != nil {
		if len(split(name)) == 0 && flag&(os.O_WRONLY|os.O_RDWR) == 0 {
			return &memFile{fs: m, node: m.root, name: name, read: true}, nil
		}
		return nil, err
	}
	acc := flag & (os.O_RDONLY | os.O_WRONLY | os.O_RDWR)
	write := acc == os.O_WRONLY || acc == os.O_RDWR
	n, ok := dir.children[base]
	switch {
	case !ok && flag&os.O_CREATE == 0:
		return nil, pathErr("open", name, fs.ErrNotExist)
	case ok && flag&os.O_CREATE != 0 && flag&os.O_EXCL != 0:
		return nil, pathErr("open", name, fs.ErrExist)
	case ok && n.dir && write:
		return nil, pathErr("open", name, syscall.EISDIR)
	case !ok:
		n = &memNode{modTime: time.Now()}
		dir.children[base] = n
	}
	if flag&os.O_TRUNC != 0 && write {
		n.data = nil
	}
	return &memFile{
		fs: m, node: n, name: name,
		read: acc != os.O_WRONLY, write: write, append: flag&os.O_APPEND != 0,
	}, nil
}

// Rename implements FS.
func (m *MemFS) Rename(oldpath, newpath string) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	od, ob, err := m.parentLocked("rename", oldpath)
	if err != nil {
		return err
	}
	nd, nb, err := m.parentLocked("rename", newpath)
	if err != nil {
		return err
	}
	n, ok := od.children[ob]
	if !ok {
		return pathErr("rename", oldpath, fs.ErrNotExist)
	}
	if t, ok := nd.children[nb]; ok && t.dir {
		return pathErr("rename", newpath, syscall.EISDIR)
	}
	delete(od.children, ob)
	nd.children[nb] = n
	return nil
}

// Remove implements FS.
func (m *MemFS) Remove(name string) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	dir, base, err := m.parentLocked("remove", name)
	if err != nil {
		return err
	}
	n, ok := dir.children[base]
	if !ok {
		return pathErr("remove", name, fs.ErrNotExist)
	}
	if n.dir && len(n.children) > 0 {
		return pathErr("remove", name, syscall.ENOTEMPTY)
	}
	delete(dir.children, base)
	return nil
}

// ReadDir implements FS.
func (m *MemFS) ReadDir(name string) ([]fs.DirEntry, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	n, err := m.lookupLocked("readdir", name)
	if err != nil {
		return nil, err
	}
	if !n.dir {
		return nil, pathErr("readdir", name, syscall.ENOTDIR)
	}
	out := make([]fs.DirEntry, 0, len(n.children))
	for base, c := range n.children {
		out = append(out, fs.FileInfoToDirEntry(c.infoLocked(base)))
	}
	slices.SortFunc(out, func(a, b fs.DirEntry) int { return strings.Compare(a.Name(), b.Name()) })
	return out, nil
}

// Stat implements FS.
func (m *MemFS) Stat(name string) (fs.FileInfo, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	n, err := m.lookupLocked("stat", name)
	if err != nil {
		return nil, err
	}
	parts := split(name)
	base := "/"
	if len(parts) > 0 {
		base = parts[len(parts)-1]
	}
	return n.infoLocked(base), nil
}

// MkdirAll implements FS. New directories are entries of their parents like
// any other, so they too are durable only after SyncDir of the parent.
func (m *MemFS) MkdirAll(name string, _ fs.FileMode) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	n := m.root
	for _, e := range split(name) {
		c, ok := n.children[e]
		switch {
		case !ok:
			c = newDir()
			c.modTime = time.Now()
			n.children[e] = c
		case !c.dir:
			return pathErr("mkdir", name, syscall.ENOTDIR)
		}
		n = c
	}
	return nil
}

// SyncDir implements FS.
func (m *MemFS) SyncDir(name string) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	n, err := m.lookupLocked("syncdir", name)
	if err != nil {
		return err
	}
	if !n.dir {
		return pathErr("syncdir", name, syscall.ENOTDIR)
	}
	n.durable = maps.Clone(n.children)
	return nil
}

// FreeBytes implements FS; see SetFreeBytes.
func (m *MemFS) FreeBytes(name string) (uint64, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if _, err := m.lookupLocked("statfs", name); err != nil {
		return 0, err
	}
	return m.free, nil
}

func (n *memNode) infoLocked(name string) fs.FileInfo {
	fi := memInfo{name: name, size: int64(len(n.data)), modTime: n.modTime, mode: 0o644}
	if n.dir {
		fi.mode = fs.ModeDir | 0o755
		fi.size = 0
	}
	return fi
}

type memInfo struct {
	name    string
	size    int64
	mode    fs.FileMode
	modTime time.Time
}

func (fi memInfo) Name() string       { return fi.name }
func (fi memInfo) Size() int64        { return fi.size }
func (fi memInfo) Mode() fs.FileMode  { return fi.mode }
func (fi memInfo) ModTime() time.Time { return fi.modTime }
func (fi memInfo) IsDir() bool        { return fi.mode.IsDir() }
func (fi memInfo) Sys() any           { return nil }

// memFile is an open MemFS file: a node plus a position.
type memFile struct {
	fs                  *MemFS
	node                *memNode
	name                string
	off                 int64 // guarded by fs.mu
	read, write, append bool
	closed              bool // guarded by fs.mu
}

func (f *memFile) checkLocked(op string, wantWrite bool) error {
	switch {
	case f.closed:
		return pathErr(op, f.name, fs.ErrClosed)
	case wantWrite && !f.write, !wantWrite && !f.read:
		return pathErr(op, f.name, syscall.EBADF)
	case f.node.dir && (wantWrite || op != "stat"):
		return pathErr(op, f.name, syscall.EISDIR)
	}
	return nil
}

func (f *memFile) Read(p []byte) (int, error) {
	f.fs.mu.Lock()
	defer f.fs.mu.Unlock()
	if err := f.checkLocked("read", false); err != nil {
		return 0, err
	}
	if f.off >= int64(len(f.node.data)) {
		return 0, io.EOF
	}
	n := copy(p, f.node.data[f.off:])
	f.off += int64(n)
	return n, nil
}

func (f *memFile) ReadAt(p []byte, off int64) (int, error) {
	f.fs.mu.Lock()
	defer f.fs.mu.Unlock()
	if err := f.checkLocked("read", false); err != nil {
		return 0, err
	}
	if off < 0 {
		return 0, pathErr("read", f.name, fs.ErrInvalid)
	}
	if off >= int64(len(f.node.data)) {
		return 0, io.EOF
	}
	n := copy(p, f.node.data[off:])
	if n < len(p) {
		return n, io.EOF
	}
	return n, nil
}

func (f *memFile) Write(p []byte) (int, error) {
	f.fs.mu.Lock()
	defer f.fs.mu.Unlock()
	if err := f.checkLocked("write", true); err != nil {
		return 0, err
	}
	if f.append {
		f.off = int64(len(f.node.data))
	}
	n, herr := len(p), error(nil)
	if f.fs.hook != nil {
		if hn, err := f.fs.hook(f.name, p); err != nil {
			n, herr = min(max(hn, 0), len(p)), err
		}
	}
	end := f.off + int64(n)
	if end > int64(len(f.node.data)) {
		f.node.data = append(f.node.data, make([]byte, end-int64(len(f.node.data)))...)
	}
	copy(f.node.data[f.off:], p[:n])
	f.off = end
	f.node.modTime = time.Now()
	if herr != nil {
		return n, pathErr("write", f.name, herr)
	}
	return n, nil
}

func (f *memFile) Sync() error {
	f.fs.mu.Lock()
	defer f.fs.mu.Unlock()
	if f.closed {
		return pathErr("sync", f.name, fs.ErrClosed)
	}
	f.node.synced = slices.Clone(f.node.data)
	return nil
}

func (f *memFile) Truncate(size int64) error {
	f.fs.mu.Lock()
	defer f.fs.mu.Unlock()
	if err := f.checkLocked("truncate", true); err != nil {
		return err
	}
	if size < 0 {
		return pathErr("truncate", f.name, fs.ErrInvalid)
	}
	if size <= int64(len(f.node.data)) {
		f.node.data = slices.Clone(f.node.data[:size])
	} else {
		f.node.data = append(f.node.data, make([]byte, size-int64(len(f.node.data)))...)
	}
	return nil
}

func (f *memFile) Stat() (fs.FileInfo, error) {
	f.fs.mu.Lock()
	defer f.fs.mu.Unlock()
	if f.closed {
		return nil, pathErr("stat", f.name, fs.ErrClosed)
	}
	return f.node.infoLocked(path.Base(filepath.ToSlash(f.name))), nil
}

func (f *memFile) Close() error {
	f.fs.mu.Lock()
	defer f.fs.mu.Unlock()
	if f.closed {
		return pathErr("close", f.name, fs.ErrClosed)
	}
	f.closed = true
	return nil
}

// TotalBytes implements FS; see SetTotalBytes.
func (m *MemFS) TotalBytes(name string) (uint64, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if _, err := m.lookupLocked("statfs", name); err != nil {
		return 0, err
	}
	return m.total, nil
}
