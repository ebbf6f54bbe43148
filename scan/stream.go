package scan

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"sync"

	"github.com/gpuhost/gpuhost/engine"
	"github.com/gpuhost/gpuhost/facts"
	"github.com/gpuhost/gpuhost/internal/userfile"
	"github.com/gpuhost/gpuhost/reports"
)

// MaxSavedDoc bounds one saved facts document: a line of NDJSON, or a file.
const MaxSavedDoc = 64 << 20

// Saved is one saved facts document as read, not yet decoded.
type Saved struct {
	// Name labels the document in errors and reports: the file, with
	// "#N" when the file holds several.
	Name string
	// Data is the document's JSON.
	Data []byte
}

// SavedReader reads the saved facts documents of a list of files in turn:
// each holds one pretty-printed document or many as NDJSON, and "-" is
// stdin. Files are opened as they are reached.
type SavedReader struct {
	files []string
	stdin io.Reader
	// The file being read.
	name  string
	close func() error
	split *Splitter
	n     int
}

// NewSavedReader reads files, or stdin when files is empty.
func NewSavedReader(files []string, stdin io.Reader) *SavedReader {
	if len(files) == 0 {
		files = []string{"-"}
	}
	return &SavedReader{files: files, stdin: stdin}
}

// Next returns the next document, or io.EOF after the last one.
func (r *SavedReader) Next() (Saved, error) {
	for {
		if r.split == nil {
			if len(r.files) == 0 {
				return Saved{}, io.EOF
			}
			if err := r.open(r.files[0]); err != nil {
				return Saved{}, err
			}
			r.files = r.files[1:]
		}
		v, err := r.split.Next()
		if errors.Is(err, io.EOF) {
			if err := r.Close(); err != nil {
				return Saved{}, err
			}
			continue
		}
		r.n++
		if err != nil {
			return Saved{}, fmt.Errorf("reading facts %s (document %d): %w", r.name, r.n, err)
		}
		// The splitter reuses its buffer for the next value.
		d := Saved{Name: r.name, Data: bytes.Clone(v)}
		more, err := r.split.More()
		if err != nil {
			return Saved{}, fmt.Errorf("reading facts %s (document %d): %w", r.name, r.n+1, err)
		}
		if r.n > 1 || more {
			d.Name = fmt.Sprintf("%s#%d", r.name, r.n)
		}
		return d, nil
	}
}

func (r *SavedReader) open(name string) error {
	r.n = 0
	if name == "-" {
		r.name, r.close, r.split = "stdin", nil, NewSplitter(r.stdin, MaxSavedDoc)
		return nil
	}
	f, err := userfile.Open(name)
	if err != nil {
		return fmt.Errorf("reading facts: %w", err)
	}
	r.name, r.close, r.split = name, f.Close, NewSplitter(f, MaxSavedDoc)
	return nil
}

// Close closes the file being read, if any.
func (r *SavedReader) Close() error {
	r.split = nil
	if r.close == nil {
		return nil
	}
	c := r.close
	r.close = nil
	return c()
}

// Saved validates a saved document against the facts schema, then
// evaluates it. Saved facts come from anywhere; the schema is the gate, and
// a document that records no collector's outcome proves nothing.
func (s *Scanner) Saved(ctx context.Context, d Saved) (*reports.Report, error) {
	decoded, err := facts.DecodeJSON(d.Data)
	if err != nil {
		return nil, fmt.Errorf("facts %s: %w", d.Name, err)
	}
	doc, err := engine.DocumentFromValue(decoded, d.Name)
	if err != nil {
		return nil, err
	}
	if len(doc.Collectors) == 0 {
		return nil, fmt.Errorf("facts %s: collectors is empty: the document records no collector's outcome, so no check could be judged on it", d.Name)
	}
	return s.Document(ctx, doc, d.Data)
}

// FleetResult is one document's report, and its NDJSON line when the
// fleet run was asked to encode.
type FleetResult struct {
	Doc    Saved
	Report *reports.Report
	Line   []byte
}

// FleetOptions tune Fleet.
type FleetOptions struct {
	// Workers evaluate documents at once; at least one.
	Workers int
	// Encode, when set, renders each report on the worker that made it, so
	// that the one goroutine writing the output only copies bytes.
	Encode func(*reports.Report) ([]byte, error)
}

// Fleet evaluates every document r reads and calls emit with the results
// in input order. The first error (reading, evaluating, or from emit)
// stops the run and is returned.
func (s *Scanner) Fleet(ctx context.Context, r *SavedReader, o FleetOptions, emit func(FleetResult) error) error {
	defer r.Close()
	workers := max(o.Workers, 1)
	work := func(ctx context.Context, d Saved) (FleetResult, error) {
		rep, err := s.Saved(ctx, d)
		if err != nil {
			return FleetResult{}, err
		}
		res := FleetResult{Doc: d, Report: rep}
		if o.Encode != nil {
			if res.Line, err = o.Encode(rep); err != nil {
				return FleetResult{}, fmt.Errorf("encoding the report of %s: %w", d.Name, err)
			}
		}
		// The document's bytes are not needed past its report.
		res.Doc.Data = nil
		return res, nil
	}
	return Ordered(ctx, workers, 4*workers, r.Next, work, emit)
}

// Ordered runs work on every input next returns (until io.EOF) on workers
// goroutines, and calls emit with the outputs in input order, on the
// calling goroutine. At most window inputs are read and not yet emitted at
// any time: when the input ahead is slow, reading waits rather than
// holding the outputs behind it, so memory stays flat in the number of
// inputs. The first error from next, work or emit, or ctx's, stops the run
// and is returned once every goroutine has finished.
func Ordered[In, Out any](ctx context.Context, workers, window int, next func() (In, error), work func(context.Context, In) (Out, error), emit func(Out) error) error {
	workers, window = max(workers, 1), max(window, workers, 1)
	parent := ctx
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()

	run := &orderedRun[In, Out]{
		ctx:      ctx,
		cancel:   cancel,
		tokens:   make(chan struct{}, window),
		jobs:     make(chan orderedJob[In]),
		results:  make(chan orderedResult[Out], window),
		readDone: make(chan struct{}),
	}
	go run.read(next)
	run.startWorkers(workers, work)
	firstErr := run.emitInOrder(window, emit)

	select {
	case <-run.readDone:
		if run.readErr != nil && (firstErr == nil || errors.Is(firstErr, context.Canceled)) {
			return run.readErr
		}
	case <-parent.Done():
	}
	if firstErr == nil {
		firstErr = parent.Err()
	}
	return firstErr
}

// orderedRun is what the reader, the workers and the emitter of one
// Ordered run share, so each can be read as a loop of its own: the tokens
// that bound the window, the channels between them, and the reader's error.
type orderedRun[In, Out any] struct {
	ctx    context.Context
	cancel context.CancelFunc
	// tokens holds one token per input read and not yet emitted.
	tokens  chan struct{}
	jobs    chan orderedJob[In]
	results chan orderedResult[Out]
	// readErr is read only once readDone is closed.
	readErr  error
	readDone chan struct{}
}

// orderedJob is an input numbered by its place in the input, so its output
// can be put back in order.
type orderedJob[In any] struct {
	seq int
	in  In
}

// orderedResult is a job's output, or its error, under the job's number.
type orderedResult[Out any] struct {
	seq int
	out Out
	err error
}

// read feeds the workers, taking a token before each input so it never
// reads further ahead of the emitter than the window allows. It may sit in
// a read that only more input ends (a quiet stdin); a cancelled run does
// not wait for it, so a signal ends the run at once.
func (r *orderedRun[In, Out]) read(next func() (In, error)) {
	defer close(r.readDone)
	defer close(r.jobs)
	for seq := 0; ; seq++ {
		select {
		case r.tokens <- struct{}{}:
		case <-r.ctx.Done():
			return
		}
		in, err := next()
		if errors.Is(err, io.EOF) {
			return
		}
		if err != nil {
			r.readErr = err
			r.cancel()
			return
		}
		select {
		case r.jobs <- orderedJob[In]{seq, in}:
		case <-r.ctx.Done():
			return
		}
	}
}

// startWorkers runs work on the jobs and closes results once every worker
// has stopped, which is how the emitter learns the run is over.
func (r *orderedRun[In, Out]) startWorkers(workers int, work func(context.Context, In) (Out, error)) {
	var workersDone sync.WaitGroup
	for range workers {
		workersDone.Add(1)
		go func() {
			defer workersDone.Done()
			for {
				var j orderedJob[In]
				select {
				case next, open := <-r.jobs:
					if !open {
						return
					}
					j = next
				case <-r.ctx.Done():
					return
				}
				out, err := work(r.ctx, j.in)
				// results has room for every token, so this never blocks.
				r.results <- orderedResult[Out]{j.seq, out, err}
			}
		}()
	}
	go func() {
		workersDone.Wait()
		close(r.results)
	}()
}

// emitInOrder holds outputs that arrive early until those before them have
// been emitted, and gives a token back for each one emitted. After the
// first error it still drains results until every worker has stopped, so
// Ordered returns only once no goroutine of its own is left running.
func (r *orderedRun[In, Out]) emitInOrder(window int, emit func(Out) error) error {
	var firstErr error
	pending := make(map[int]orderedResult[Out], window)
	want := 0
	for res := range r.results {
		if firstErr != nil {
			continue
		}
		pending[res.seq] = res
		for p, ok := pending[want]; ok; p, ok = pending[want] {
			delete(pending, want)
			want++
			err := p.err
			if err == nil {
				err = emit(p.out)
			}
			if err != nil {
				firstErr = err
				r.cancel()
				break
			}
			<-r.tokens
		}
	}
	return firstErr
}
