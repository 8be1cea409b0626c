package cli

import (
	"context"
	"encoding/json"
	"io"
	"time"

	"github.com/parley-chat/parley/client"
)

// callServer runs fn against the server of co within --timeout, retrying
// what the server marks retryable. Writes pass write=true: every attempt
// then carries one fresh idempotency key, so a retried write applies once.
func callServer(ctx context.Context, co *clientOptions, write bool, fn func(ctx context.Context, c *client.Client) error) error {
	ctx, cancel := context.WithTimeout(ctx, co.Timeout)
	defer cancel()
	if write {
		ctx = client.WithIdempotencyKey(ctx, randomKey())
	}
	c := co.newClient()
	return retry(ctx, func() error { return fn(ctx, c) })
}

// printJSON writes v to w as indented JSON, for --json, with the
// characters a terminal would act on escaped inside strings (jsonTermSafe:
// the JSON decodes to the same values).
func printJSON(w io.Writer, v any) error {
	b, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return err
	}
	_, err = w.Write(append(jsonTermSafe(b), '\n'))
	return err
}

// clock renders a Unix millisecond time as a local time of day, with the
// date when it is not today.
func clock(ms int64) string {
	t := time.UnixMilli(ms)
	y, m, d := t.Date()
	if ny, nm, nd := time.Now().Date(); y == ny && m == nm && d == nd {
		return t.Format("15:04:05")
	}
	return t.Format("2006-01-02 15:04:05")
}

// printJSONList writes list as printJSON does, an empty list as [] (never
// null).
func printJSONList[T any](w io.Writer, list []T) error {
	if list == nil {
		list = []T{}
	}
	return printJSON(w, list)
}

// printJSONLine writes v to w as one line of JSON, for streams of records,
// escaped as by printJSON.
func printJSONLine(w io.Writer, v any) error {
	b, err := json.Marshal(v)
	if err != nil {
		return err
	}
	_, err = w.Write(append(jsonTermSafe(b), '\n'))
	return err
}
