package secureboot

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
)

// The xz format (tukaani.org/xz/xz-file-format.txt) lists every block of a
// stream in the index at its end, so each block header, and the LZMA2
// dictionary size it asks for, can be found before anything is decoded.
var (
	xzHeaderMagic = []byte{0xfd, '7', 'z', 'X', 'Z', 0}
	xzFooterMagic = []byte{'Y', 'Z'}
)

const (
	xzHeaderSize = 12
	xzLZMA2      = 0x21
	// maxXZStreams and maxXZBlocks bound what one file may list.
	maxXZStreams = 16
	maxXZBlocks  = 1 << 16
)

// checkXZDictionaries fails unless every block of every stream in data
// uses an LZMA2 dictionary of at most max bytes.
func checkXZDictionaries(data []byte, max int64) error {
	for streams := 0; ; streams++ {
		// Stream padding is zeros in multiples of four.
		for len(data) >= 4 && bytes.Equal(data[len(data)-4:], []byte{0, 0, 0, 0}) {
			data = data[:len(data)-4]
		}
		if len(data) == 0 {
			return nil
		}
		if streams >= maxXZStreams {
			return fmt.Errorf("more than %d xz streams", maxXZStreams)
		}
		start, err := checkXZStream(data, max)
		if err != nil {
			return err
		}
		data = data[:start]
	}
}

// checkXZStream checks the last stream in data and returns where it
// starts.
func checkXZStream(data []byte, max int64) (int, error) {
	if len(data) < 2*xzHeaderSize || !bytes.Equal(data[len(data)-2:], xzFooterMagic) {
		return 0, errors.New("no xz stream footer")
	}
	footer := data[len(data)-xzHeaderSize:]
	indexSize := (int64(binary.LittleEndian.Uint32(footer[4:])) + 1) * 4
	indexStart := int64(len(data)-xzHeaderSize) - indexSize
	if indexStart < xzHeaderSize {
		return 0, errors.New("the xz index lies outside the stream")
	}
	index := data[indexStart : len(data)-xzHeaderSize]
	if index[0] != 0 {
		return 0, errors.New("no xz index where the footer puts it")
	}
	rest := index[1:]
	count, rest, err := xzVarint(rest)
	if err != nil || count > maxXZBlocks {
		return 0, fmt.Errorf("xz index: %d blocks (%v)", count, err)
	}
	sizes := make([]int64, 0, count)
	total := int64(0)
	for range count {
		var unpadded uint64
		if unpadded, rest, err = xzVarint(rest); err != nil {
			return 0, fmt.Errorf("xz index: %w", err)
		}
		if _, rest, err = xzVarint(rest); err != nil {
			return 0, fmt.Errorf("xz index: %w", err)
		}
		padded := (int64(unpadded) + 3) &^ 3
		if unpadded == 0 || padded < 0 || padded > indexStart {
			return 0, fmt.Errorf("xz index: a block of %d bytes", unpadded)
		}
		sizes = append(sizes, padded)
		if total += padded; total > indexStart {
			return 0, errors.New("xz index: the blocks are larger than the stream")
		}
	}
	start := indexStart - total - xzHeaderSize
	if start < 0 || !bytes.Equal(data[start:start+6], xzHeaderMagic) {
		return 0, errors.New("no xz stream header where the index puts it")
	}
	off := start + xzHeaderSize
	for i, n := range sizes {
		if err := checkXZBlockHeader(data[off:off+n], max); err != nil {
			return 0, fmt.Errorf("xz block %d: %w", i, err)
		}
		off += n
	}
	return int(start), nil
}

// checkXZBlockHeader reads the filter flags at the start of block.
func checkXZBlockHeader(block []byte, max int64) error {
	if len(block) < 2 || block[0] == 0 || (int(block[0])+1)*4 > len(block) {
		return errors.New("no block header")
	}
	hdr := block[1 : (int(block[0])+1)*4]
	flags := hdr[0]
	if flags&0x3c != 0 {
		return fmt.Errorf("block flags 0x%02x", flags)
	}
	rest := hdr[1:]
	var err error
	for _, bit := range []byte{0x40, 0x80} {
		if flags&bit != 0 {
			if _, rest, err = xzVarint(rest); err != nil {
				return err
			}
		}
	}
	for range int(flags&3) + 1 {
		var id, n uint64
		if id, rest, err = xzVarint(rest); err != nil {
			return err
		}
		if n, rest, err = xzVarint(rest); err != nil {
			return err
		}
		if n > uint64(len(rest)) {
			return errors.New("filter properties cut short")
		}
		props := rest[:n]
		rest = rest[n:]
		if id != xzLZMA2 {
			continue
		}
		if n != 1 || props[0] > 40 {
			return errors.New("bad LZMA2 properties")
		}
		if d := xzDictSize(props[0]); d > max {
			return fmt.Errorf("an LZMA2 dictionary of %d bytes, more than the %d allowed", d, max)
		}
	}
	return nil
}

// xzDictSize decodes the LZMA2 dictionary size byte.
func xzDictSize(b byte) int64 {
	if b == 40 {
		return 1<<32 - 1
	}
	return int64(2|b&1) << (b/2 + 11)
}

// xzVarint reads the format's multibyte integer: seven bits a byte, at
// most nine bytes.
func xzVarint(b []byte) (uint64, []byte, error) {
	var v uint64
	for i := 0; i < 9 && i < len(b); i++ {
		v |= uint64(b[i]&0x7f) << (7 * i)
		if b[i]&0x80 == 0 {
			if i > 0 && b[i] == 0 {
				return 0, nil, errors.New("a varint with a zero last byte")
			}
			return v, b[i+1:], nil
		}
	}
	return 0, nil, errors.New("a varint cut short or too long")
}
