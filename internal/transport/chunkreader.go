package transport

import "io"

// chunkReader presents the framed snapshot data of an 'S' connection as a
// plain stream: it strips the chunk length prefixes and reports io.EOF at
// the zero-length terminator. A connection that ends before the terminator
// yields io.ErrUnexpectedEOF, so a handler never mistakes a cut stream for a
// complete snapshot.
type chunkReader struct {
	l      *link
	remain int   // bytes left in the current chunk
	err    error // sticky: io.EOF after the terminator, or the failure
}

// Read implements io.Reader.
func (r *chunkReader) Read(p []byte) (int, error) {
	if r.err != nil {
		return 0, r.err
	}
	for r.remain == 0 {
		n, err := readFrameLen(r.l.br, maxSnapChunk)
		if err != nil {
			r.err = noEOF(err)
			return 0, r.err
		}
		if n == 0 {
			r.err = io.EOF
			return 0, io.EOF
		}
		r.remain = n
	}
	if len(p) == 0 {
		return 0, nil
	}
	if len(p) > r.remain {
		p = p[:r.remain]
	}
	n, err := r.l.br.Read(p)
	r.remain -= n
	if err != nil {
		r.err = noEOF(err)
		if n > 0 {
			return n, nil
		}
		return 0, r.err
	}
	return n, nil
}
