//go:build !lean

package main

import (
	"bufio"
	"errors"
	"fmt"
	"path/filepath"

	"github.com/spf13/cobra"

	"github.com/gpuhost/gpuhost/internal/userfile"
	"github.com/gpuhost/gpuhost/manifest"
	"github.com/gpuhost/gpuhost/manifest/lock"
	"github.com/gpuhost/gpuhost/manifest/treedigest"
)

// maxLockManifest bounds the manifest lock reads: a CUDA image's inventory
// is a few MiB.
const maxLockManifest = 64 << 20

// lockCommand writes the lock file of a baked image from its manifest.
func (a *app) lockCommand() *cobra.Command {
	var from, output string
	cmd := &cobra.Command{
		Use:   "lock --from MANIFEST [-o PATH]",
		Short: "Write the lock file (gpuhost.lock/v1) of a baked image from its manifest",
		Long: "lock reads a baked manifest (an image's " + manifest.Path + ") and writes its lock file: every installed package=version with the sha256 of its .deb, the mirror or snapshot, and the digests of the apt sources and keyrings. " +
			"A build whose gpuhost-rootfs builder and gpuhost-gpu provisioner take it as lock_file installs exactly that set, and fails naming the package on any difference. " +
			"The file goes to images/<template>.lock, the template the manifest names, unless -o says where.",
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if from == "" {
				return errors.New("--from is required")
			}
			data, err := userfile.Read(from, maxLockManifest)
			if err != nil {
				return fmt.Errorf("reading manifest %q: %w", from, err)
			}
			m, err := manifest.Decode(data)
			if err != nil {
				return fmt.Errorf("parsing manifest %q: %w", from, err)
			}
			l, err := lock.FromManifest(m)
			if err != nil {
				return fmt.Errorf("manifest %q: %w", from, err)
			}
			// Encoded before the file is made, so that a lock Encode
			// refuses leaves nothing behind.
			text, err := l.Encode()
			if err != nil {
				return fmt.Errorf("manifest %q: %w", from, err)
			}
			if output == "" {
				if l.Template == "" {
					return fmt.Errorf("manifest %q names no template (build.template); say where the lock goes with -o", from)
				}
				output = filepath.Join("images", l.Template+".lock")
			}
			if err := manifest.WriteFileAtomic(output, text, 0o644); err != nil {
				return err
			}
			fmt.Fprintf(a.stderr, "gpuhost: wrote %s: %d packages, %d sources, %d keyrings\n", output, len(l.Packages), len(l.Sources), len(l.Keyrings))
			return nil
		},
	}
	cmd.Flags().StringVar(&from, "from", "", "the baked manifest (gpuhost.manifest/v1) to lock")
	cmd.Flags().StringVarP(&output, "output", "o", "", "write the lock here instead of images/<template>.lock")
	return cmd
}

// treeDigestCommand prints the digest a rootfs build records of its tree.
func (a *app) treeDigestCommand() *cobra.Command {
	var list bool
	cmd := &cobra.Command{
		Use:   "tree-digest DIR",
		Short: "Print the digest of a rootfs tree, as the gpuhost-rootfs builder records it",
		Long: "tree-digest walks DIR in sorted order and prints sha256:<hex> of every entry's path, type, permission bits, owner and contents (file bytes, symlink targets, device numbers, extended attributes, hard links); modification times are left out. " +
			"It leaves out the contents of the same few files the builder does, each still listed by path: " + treedigest.ExcludedSummary() + ". " +
			"--list prints one line per entry instead, so that two trees can be compared with diff.",
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			o := treedigest.Options{Exclude: treedigest.BuildExcludes}
			if !list {
				d, err := treedigest.Digest(args[0], o)
				if err != nil {
					return err
				}
				_, err = fmt.Fprintln(a.stdout, d)
				return err
			}
			w := bufio.NewWriter(a.stdout)
			err := treedigest.Walk(args[0], o, func(line string) error {
				_, err := w.WriteString(line + "\n")
				return err
			})
			if ferr := w.Flush(); err == nil {
				err = ferr
			}
			return err
		},
	}
	cmd.Flags().BoolVar(&list, "list", false, "print every entry's line instead of the digest")
	return cmd
}
