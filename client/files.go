package client

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"mime"
	"net/http"
	"net/url"
	"strconv"
)

// FileInfo describes a file: the answer to an upload, and each of a
// message's files (Event.Files).
type FileInfo struct {
	// ID names the file: "<room>.<16 hex digits>".
	ID          string `json:"id"`
	Name        string `json:"name"`
	Size        int64  `json:"size"`
	ContentType string `json:"content_type"`
	// URL is the file's path on every node: /api/v1/files/<id>.
	URL string `json:"url"`
}

// UploadFile stores the bytes of body as a file called name of media type
// contentType in room, for the caller to attach to a post
// (PostOptions.Files). size is body's length, or -1 when unknown: a known
// size lets the server refuse a file over its --max-file-size before any
// byte is sent. The server answers 413 past that limit, 409 when the
// room's file quota is full, 400 naming a bad name or media type. With
// WithIdempotencyKey a retried upload stores the file once.
func (c *Client) UploadFile(ctx context.Context, room, name, contentType string, body io.Reader, size int64) (FileInfo, error) {
	path := roomPath(room, "/files") + "?" + url.Values{"name": {name}}.Encode()
	req, err := c.newRequest(ctx, http.MethodPost, path, body)
	if err != nil {
		return FileInfo{}, err
	}
	req.ContentLength = size
	if size == 0 {
		req.Body = http.NoBody
	}
	resp, err := c.send(req, http.Header{"Content-Type": {contentType}})
	if err != nil {
		return FileInfo{}, err
	}
	defer resp.Body.Close()
	var f FileInfo
	if err := json.NewDecoder(resp.Body).Decode(&f); err != nil {
		return FileInfo{}, fmt.Errorf("parley: POST %s: decoding response: %w", path, err)
	}
	return f, nil
}

// DownloadFile returns file id's description and its bytes, which the
// caller reads and closes. A file the caller may not see (or a deleted
// one) is an *Error with status 404; one of a room the caller is not a
// member of, 403. A body shorter than FileInfo.Size means the download was
// cut (the file was deleted meanwhile): io.ErrUnexpectedEOF.
func (c *Client) DownloadFile(ctx context.Context, id string) (FileInfo, io.ReadCloser, error) {
	resp, err := c.do(ctx, http.MethodGet, "/api/v1/files/"+url.PathEscape(id), nil, nil)
	if err != nil {
		return FileInfo{}, nil, err
	}
	f := FileInfo{ID: id, Size: resp.ContentLength, ContentType: resp.Header.Get("Content-Type"), URL: "/api/v1/files/" + id}
	if _, params, err := mime.ParseMediaType(resp.Header.Get("Content-Disposition")); err == nil {
		f.Name = params["filename"]
	}
	if f.Size < 0 {
		f.Size, _ = strconv.ParseInt(resp.Header.Get("Content-Length"), 10, 64)
	}
	return f, resp.Body, nil
}
