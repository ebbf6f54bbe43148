package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
)

// jsonProblem words what encoding/json found wrong with a document, whose
// own messages speak of Go types ("cannot unmarshal array into Go value of
// type reports.Report") or say a bare EOF. ok is false for an error that is
// not encoding/json's, which its maker has worded already.
func jsonProblem(err error) (problem string, ok bool) {
	var syntax *json.SyntaxError
	var typ *json.UnmarshalTypeError
	switch {
	case err == nil:
		return "", false
	case errors.Is(err, io.EOF):
		return "the file is empty", true
	case errors.Is(err, io.ErrUnexpectedEOF):
		return "the JSON is cut short", true
	case errors.As(err, &syntax):
		return fmt.Sprintf("not JSON at byte %d (%s)", syntax.Offset, strings.TrimPrefix(syntax.Error(), "json: ")), true
	case errors.As(err, &typ) && typ.Field == "":
		return fmt.Sprintf("a JSON %s where the document's object belongs", typ.Value), true
	case errors.As(err, &typ):
		return fmt.Sprintf("field %q holds a JSON %s, of the wrong type", typ.Field, typ.Value), true
	}
	if msg, found := strings.CutPrefix(lastMessage(err), "json: unknown field "); found {
		return "unknown field " + msg, true
	}
	return "", false
}

// lastMessage is the message of the innermost error err wraps.
func lastMessage(err error) string {
	for {
		next := errors.Unwrap(err)
		if next == nil {
			return err.Error()
		}
		err = next
	}
}

// outputProblem says why path cannot be written as a file, so that a
// command refuses it before doing the work whose result would go there,
// and in words rather than as the failed create or rename of its temporary
// file. nil when the path may be written.
func outputProblem(path string) error {
	if st, err := os.Stat(path); err == nil && st.IsDir() {
		return fmt.Errorf("%s is a directory; name a file to write", path)
	}
	dir := filepath.Dir(path)
	st, err := os.Stat(dir)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return fmt.Errorf("%s: the directory %s does not exist; create it first", path, dir)
	case err != nil:
		return fmt.Errorf("%s: %w", path, err)
	case !st.IsDir():
		return fmt.Errorf("%s: %s is not a directory", path, dir)
	}
	return nil
}
