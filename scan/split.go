package scan

import (
	"bufio"
	"errors"
	"fmt"
	"io"

	"github.com/gpuhost/gpuhost/facts"
)

// Splitter cuts a stream of JSON values (NDJSON, or values apart by any
// whitespace) into one document each, without parsing them. facts.DecodeJSON
// parses and checks every document in full, so checking its syntax here as
// well was a second pass over every byte: two thirds of the JSON work of a
// fleet of 1,500-package hosts. The splitter only finds where a value ends,
// at the bracket that closes it outside any string; a malformed document is
// cut somewhere and then refused by the decoder, naming it.
type Splitter struct {
	r       *bufio.Reader
	limit   int
	scratch []byte
}

// NewSplitter reads values of at most limit bytes each from r.
func NewSplitter(r io.Reader, limit int) *Splitter {
	return &Splitter{r: bufio.NewReaderSize(r, 1<<20), limit: limit}
}

func isJSONSpace(c byte) bool { return c == ' ' || c == '\t' || c == '\n' || c == '\r' }

// More skips whitespace and reports whether anything follows it.
func (s *Splitter) More() (bool, error) {
	for {
		chunk, err := s.r.Peek(max(s.r.Buffered(), 1))
		if len(chunk) == 0 {
			if errors.Is(err, io.EOF) {
				return false, nil
			}
			return false, err
		}
		n := 0
		for n < len(chunk) && isJSONSpace(chunk[n]) {
			n++
		}
		if _, err := s.r.Discard(n); err != nil {
			return false, err
		}
		if n < len(chunk) {
			return true, nil
		}
	}
}

// Next returns the next value's bytes, which stay valid until the next
// call, or io.EOF after the last.
func (s *Splitter) Next() ([]byte, error) {
	if ok, err := s.More(); err != nil || !ok {
		if err == nil {
			err = io.EOF
		}
		return nil, err
	}
	s.scratch = s.scratch[:0]
	var end facts.ValueEnd
	for {
		chunk, err := s.r.Peek(max(s.r.Buffered(), 1))
		if len(chunk) == 0 {
			if errors.Is(err, io.EOF) {
				if end.Scalar() && len(s.scratch) > 0 {
					return s.scratch, nil
				}
				return nil, io.ErrUnexpectedEOF
			}
			return nil, err
		}
		n := end.Feed(chunk)
		take := len(chunk)
		if n >= 0 {
			take = n
		}
		if len(s.scratch)+take > s.limit {
			return nil, fmt.Errorf("larger than %d bytes", s.limit)
		}
		s.scratch = append(s.scratch, chunk[:take]...)
		if _, err := s.r.Discard(take); err != nil {
			return nil, err
		}
		if n >= 0 {
			return s.scratch, nil
		}
	}
}
