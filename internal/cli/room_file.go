package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"os"
	"path/filepath"
	"strings"

	"github.com/parley-chat/parley/client"
)

// runRoomUpload is `parley room upload ROOM FILE`.
func runRoomUpload(ctx context.Context, e *Env, path string, args []string) error {
	var co clientOptions
	var message, name, contentType string
	fs := newFlagSet(path, "ROOM FILE [flags]", `
Upload FILE to a room you may post in and post a message carrying it
(with --message as its text, or none), then print the message's seq and
the file's id. Members download it with parley room download. The media
type is guessed from the file's extension, then from its first bytes,
unless --type gives it; images (png, jpeg, gif, webp) are shown inline
by the web app. The server refuses files over its --max-file-size and
uploads that would fill the room's --room-file-quota.`)
	addClientFlags(fs, &co)
	fs.StringVar(&message, "message", "", "`text` of the message carrying the file")
	fs.StringVar(&name, "name", "", "file `name` shown to members (default: FILE's base name)")
	fs.StringVar(&contentType, "type", "", "media `type` of the file, such as image/png (default: guessed)")
	pos, err := parseClient(fs, &co, e, args, 2, 2)
	if err != nil {
		return err
	}
	f, err := os.Open(pos[1])
	if err != nil {
		return err
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return err
	}
	if name == "" {
		name = filepath.Base(pos[1])
	}
	if contentType == "" {
		if contentType, err = guessType(f, name); err != nil {
			return err
		}
	}
	var info client.FileInfo
	var res client.PostResult
	err = callServer(ctx, &co, true, func(ctx context.Context, c *client.Client) (err error) {
		if _, err := f.Seek(0, io.SeekStart); err != nil {
			return err
		}
		info, err = c.UploadFile(ctx, pos[0], name, contentType, f, st.Size())
		return err
	})
	if err != nil {
		return err
	}
	// A call of its own: its own idempotency key.
	err = callServer(ctx, &co, true, func(ctx context.Context, c *client.Client) (err error) {
		res, err = c.Post(ctx, pos[0], message, client.PostOptions{Files: []string{info.ID}})
		return err
	})
	if err != nil {
		return fmt.Errorf("uploaded %s but could not post it: %w", info.ID, err)
	}
	fmt.Fprintf(e.Stdout, "posted #%d with %s (%s, %s)\n", res.Seq, termSafe(info.ID), termSafe(info.Name), byteSize(uint64(info.Size)))
	return nil
}

// guessType returns the media type of file f called name: by its
// extension, else by its first 512 bytes.
func guessType(f io.ReadSeeker, name string) (string, error) {
	if t := mime.TypeByExtension(strings.ToLower(filepath.Ext(name))); t != "" {
		return t, nil
	}
	head := make([]byte, 512)
	n, err := io.ReadFull(f, head)
	if err != nil && !errors.Is(err, io.EOF) && !errors.Is(err, io.ErrUnexpectedEOF) {
		return "", err
	}
	return http.DetectContentType(head[:n]), nil
}

// runRoomDownload is `parley room download FILE_ID`.
func runRoomDownload(ctx context.Context, e *Env, path string, args []string) error {
	var co clientOptions
	var out string
	fs := newFlagSet(path, "FILE_ID [flags]", `
Download a file of a room you are a member of (FILE_ID as room history
shows it, ROOM.ID) and write it to the file of its name in the current
directory, or to -o (- for standard output). An existing file is not
overwritten unless it is named with -o.`)
	addClientFlags(fs, &co)
	fs.StringVar(&out, "o", "", "`path` to write the file to (- for standard output)")
	pos, err := parseClient(fs, &co, e, args, 1, 1)
	if err != nil {
		return err
	}
	var n int64
	var dest string
	err = callServer(ctx, &co, false, func(ctx context.Context, c *client.Client) error {
		info, body, err := c.DownloadFile(ctx, pos[0])
		if err != nil {
			return err
		}
		defer body.Close()
		dest = out
		if dest == "" {
			dest = safeFileName(info.Name, pos[0])
		}
		n, err = writeDownload(e, dest, out != "", body)
		if err == nil && info.Size >= 0 && n != info.Size {
			err = fmt.Errorf("the download was cut after %d of %d bytes", n, info.Size)
		}
		return err
	})
	if err != nil {
		return err
	}
	if dest != "-" {
		fmt.Fprintf(e.Stdout, "wrote %s to %s\n", byteSize(uint64(n)), termSafe(dest))
	}
	return nil
}

// safeFileName returns the base name of a downloaded file's name, or id
// when it has none that names a file in the current directory.
func safeFileName(name, id string) string {
	base := filepath.Base(filepath.Clean("/" + name))
	if base == "/" || base == "." || base == ".." || strings.HasPrefix(base, ".") {
		return id
	}
	return base
}

// writeDownload copies body to dest (- standard output); a file named by
// the server is never written over (overwrite false).
func writeDownload(e *Env, dest string, overwrite bool, body io.Reader) (int64, error) {
	if dest == "-" {
		return io.Copy(e.Stdout, body)
	}
	flags := os.O_WRONLY | os.O_CREATE | os.O_TRUNC
	if !overwrite {
		flags = os.O_WRONLY | os.O_CREATE | os.O_EXCL
	}
	f, err := os.OpenFile(dest, flags, 0o644)
	if err != nil {
		return 0, err
	}
	n, err := io.Copy(f, body)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	return n, err
}
