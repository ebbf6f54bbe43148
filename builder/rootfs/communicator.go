package rootfs

import (
	"fmt"
	"io"
	"io/fs"
	"log"
	"os"
	"path"
	"path/filepath"
	"strings"

	"github.com/hashicorp/packer-plugin-sdk/chroot"
	"github.com/hashicorp/packer-plugin-sdk/common"
	packersdk "github.com/hashicorp/packer-plugin-sdk/packer"

	"github.com/gpuhost/gpuhost/facts/sysroot"
)

// maxTreeEntries bounds UploadDir and DownloadDir, whose trees could be
// arbitrarily large (or, for downloads, shaped by what packages installed).
const maxTreeEntries = 200000

// communicator runs commands in the rootfs with the SDK's chroot communicator
// (chroot(8) behind a CmdWrapper that enters the mount namespace), but moves
// files itself. The SDK's Upload and Download join the destination to the
// chroot path and let cp(1) and os.Open follow symlinks, so a link such as
// /etc/x -> /etc/shadow in the rootfs would read or overwrite the build
// machine's file. Here every path goes through os.Root: no link leads
// outside the rootfs. A download follows links as the chroot would (an
// absolute one from the rootfs's root); an upload refuses absolute ones.
type communicator struct {
	*chroot.Communicator
	// fsRoot is the rootfs as file operations see it: the holder's view
	// (/proc/PID/root/ROOTFS) while mounts are up, so that files written
	// under a mounted /run or /tmp land where the chroot sees them.
	fsRoot string
}

var _ packersdk.Communicator = (*communicator)(nil)

func newCommunicator(rootfs, fsRoot string, wrap common.CommandWrapper) *communicator {
	return &communicator{
		Communicator: &chroot.Communicator{Chroot: rootfs, CmdWrapper: wrap},
		fsRoot:       fsRoot,
	}
}

// rel turns a path inside the rootfs into a path relative to its root.
func rel(p string) string {
	r := strings.TrimPrefix(path.Clean("/"+filepath.ToSlash(p)), "/")
	if r == "" {
		return "."
	}
	return r
}

func (c *communicator) open() (*os.Root, error) {
	r, err := os.OpenRoot(c.fsRoot)
	if err != nil {
		return nil, fmt.Errorf("opening rootfs %s: %w", c.Chroot, err)
	}
	return r, nil
}

// Upload writes r to dst inside the rootfs, creating missing parent
// directories, with fi's permissions when given.
func (c *communicator) Upload(dst string, r io.Reader, fi *os.FileInfo) error {
	root, err := c.open()
	if err != nil {
		return err
	}
	defer root.Close()
	mode := fs.FileMode(0o644)
	if fi != nil && *fi != nil {
		mode = (*fi).Mode().Perm()
	}
	log.Printf("uploading to %s in the rootfs", dst)
	return uploadFile(root, rel(dst), r, mode)
}

func uploadFile(root *os.Root, name string, r io.Reader, mode fs.FileMode) error {
	if dir := path.Dir(name); dir != "." {
		if err := root.MkdirAll(dir, 0o755); err != nil {
			return fmt.Errorf("uploading /%s: %w", name, err)
		}
	}
	f, err := root.OpenFile(name, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, mode)
	if err != nil {
		return fmt.Errorf("uploading /%s: %w", name, err)
	}
	if _, err := io.Copy(f, r); err != nil {
		f.Close()
		return fmt.Errorf("uploading /%s: %w", name, err)
	}
	if err := f.Close(); err != nil {
		return fmt.Errorf("uploading /%s: %w", name, err)
	}
	return nil
}

// UploadDir copies the local directory src into dst inside the rootfs, as
// cp -R does: "src/" copies its contents into dst; "src" copies the directory
// itself into dst when dst is a directory, or to dst otherwise. Regular
// files, directories and symlinks are copied; exclude is not supported, as in
// the SDK's chroot communicator.
func (c *communicator) UploadDir(dst, src string, exclude []string) error {
	root, err := c.open()
	if err != nil {
		return err
	}
	defer root.Close()
	target := rel(dst)
	if !strings.HasSuffix(src, "/") {
		if fi, err := root.Stat(target); err == nil && fi.IsDir() {
			target = path.Join(target, filepath.Base(src))
		}
	}
	n := 0
	return filepath.WalkDir(src, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if n++; n > maxTreeEntries {
			return fmt.Errorf("uploading %s: more than %d entries", src, maxTreeEntries)
		}
		sub, err := filepath.Rel(src, p)
		if err != nil {
			return err
		}
		name := path.Join(target, filepath.ToSlash(sub))
		info, err := d.Info()
		if err != nil {
			return err
		}
		switch {
		case d.IsDir():
			if err := root.MkdirAll(name, info.Mode().Perm()|0o700); err != nil {
				return fmt.Errorf("uploading %s to /%s: %w", p, name, err)
			}
		case d.Type()&fs.ModeSymlink != 0:
			link, err := os.Readlink(p)
			if err != nil {
				return err
			}
			_ = root.Remove(name)
			if err := root.Symlink(link, name); err != nil {
				return fmt.Errorf("uploading %s to /%s: %w", p, name, err)
			}
		case d.Type().IsRegular():
			f, err := os.Open(p)
			if err != nil {
				return err
			}
			err = uploadFile(root, name, f, info.Mode().Perm())
			f.Close()
			if err != nil {
				return err
			}
		default:
			log.Printf("uploading %s: skipping %s, not a regular file, directory or symlink", src, p)
		}
		return nil
	})
}

// Download copies the regular file src inside the rootfs to w.
func (c *communicator) Download(src string, w io.Writer) error {
	root, err := c.open()
	if err != nil {
		return err
	}
	defer root.Close()
	// An absolute link (/etc/apt/trusted.gpg.d/x.gpg ->
	// /usr/share/keyrings/x.gpg) means the rootfs's file, as it does to a
	// process in the chroot; os.Root alone would refuse it.
	name, err := sysroot.Resolve(root, rel(src))
	if err != nil {
		return fmt.Errorf("downloading %s: %w", src, err)
	}
	f, err := root.Open(name)
	if err != nil {
		return fmt.Errorf("downloading %s: %w", src, err)
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return fmt.Errorf("downloading %s: %w", src, err)
	}
	if !fi.Mode().IsRegular() {
		return fmt.Errorf("downloading %s: not a regular file", src)
	}
	if _, err := io.Copy(w, f); err != nil {
		return fmt.Errorf("downloading %s: %w", src, err)
	}
	return nil
}

// DownloadDir copies the directory src inside the rootfs into the local
// directory dst. Only directories and regular files are copied: a symlink
// made inside the rootfs is not recreated on the build machine, where it
// could point anywhere.
func (c *communicator) DownloadDir(src, dst string, exclude []string) error {
	root, err := c.open()
	if err != nil {
		return err
	}
	defer root.Close()
	base := rel(src)
	n := 0
	return fs.WalkDir(root.FS(), base, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return fmt.Errorf("downloading %s: %w", src, err)
		}
		if n++; n > maxTreeEntries {
			return fmt.Errorf("downloading %s: more than %d entries", src, maxTreeEntries)
		}
		sub := strings.TrimPrefix(strings.TrimPrefix(p, base), "/")
		local := filepath.Join(dst, filepath.FromSlash(sub))
		switch {
		case d.IsDir():
			return os.MkdirAll(local, 0o755)
		case d.Type().IsRegular():
			in, err := root.Open(p)
			if err != nil {
				return fmt.Errorf("downloading /%s: %w", p, err)
			}
			defer in.Close()
			out, err := os.OpenFile(local, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o644)
			if err != nil {
				return err
			}
			if _, err := io.Copy(out, in); err != nil {
				out.Close()
				return fmt.Errorf("downloading /%s: %w", p, err)
			}
			return out.Close()
		default:
			log.Printf("downloading %s: skipping /%s, not a regular file or directory", src, p)
			return nil
		}
	})
}
