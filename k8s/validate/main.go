// Command parley-k8s-validate checks rendered Kubernetes manifests strictly.
//
// Every YAML document is decoded into the real Kubernetes API Go type for its
// apiVersion/kind (k8s.io/api), the way the API server's strict field
// validation does it: unknown fields, misspelled fields, wrongly-cased fields,
// duplicate keys and wrongly-typed values are all errors, and a kind that is
// not in the registry below is an error too. After decoding, cross-document
// checks run (selectors, references, probes, resources, pod security, Parley
// configuration; see checks.go), the NATS server config check (nats.go) and
// the Cassandra commit-log check (cassandra.go: fsynced before a write is
// acknowledged).
//
// Usage:
//
//	parley-k8s-validate [-label NAME] FILE...    (FILE "-" reads stdin)
//
// All files of one invocation form one set for the cross-document checks
// (e.g. the output of one `kustomize build`). Exit status: 0 when valid, 1
// when any problem was found, 2 on usage or I/O errors.
package main

import (
	"bufio"
	"bytes"
	"flag"
	"fmt"
	"io"
	"os"
	"regexp"
	"runtime/debug"
	"sort"
	"strings"
)

func main() {
	label := flag.String("label", "", "name for this set of files in messages (default: the file names)")
	flag.Usage = func() {
		fmt.Fprintf(flag.CommandLine.Output(), "usage: %s [-label NAME] FILE... (\"-\" = stdin)\n", os.Args[0])
		flag.PrintDefaults()
	}
	flag.Parse()
	if flag.NArg() == 0 {
		flag.Usage()
		os.Exit(2)
	}
	name := *label
	if name == "" {
		name = strings.Join(flag.Args(), " ")
	}

	var inputs []input
	for _, path := range flag.Args() {
		var data []byte
		var err error
		if path == "-" {
			data, err = io.ReadAll(os.Stdin)
			path = "<stdin>"
		} else {
			data, err = os.ReadFile(path)
		}
		if err != nil {
			fmt.Fprintf(os.Stderr, "parley-k8s-validate: %v\n", err)
			os.Exit(2)
		}
		inputs = append(inputs, input{path: path, data: data})
	}

	docs, total, findings := Validate(inputs)
	if len(findings) > 0 {
		fmt.Fprintf(os.Stderr, "FAIL %s: %d problem(s) in %d document(s)\n", name, len(findings), total)
		for _, f := range findings {
			fmt.Fprintf(os.Stderr, "  %s\n", f)
		}
		if len(docs) < total {
			fmt.Fprintf(os.Stderr, "  (cross-document checks run once every document decodes)\n")
		}
		os.Exit(1)
	}
	fmt.Printf("OK   %s: %d documents valid against k8s.io/api %s (%s)\n", name, len(docs), apiVersion(), kindSummary(docs))
}

type input struct {
	path string
	data []byte
}

// Finding is one problem, tied to a document (nil for file-level problems).
type Finding struct {
	Doc  *Doc
	File string
	Line int
	Path string // field path inside the document, e.g. spec.template.spec.containers[0].image
	Msg  string
}

func (f Finding) String() string {
	var b strings.Builder
	if f.Doc != nil {
		b.WriteString(f.Doc.String())
	} else {
		fmt.Fprintf(&b, "%s:%d", f.File, f.Line)
	}
	b.WriteString(": ")
	if f.Path != "" {
		b.WriteString(f.Path)
		b.WriteString(": ")
	}
	b.WriteString(f.Msg)
	return b.String()
}

// Validate decodes every document of the inputs strictly and runs the
// cross-document checks. It returns the successfully decoded documents, the
// number of non-empty documents, and all findings in document order.
func Validate(inputs []input) ([]*Doc, int, []Finding) {
	var docs []*Doc
	var findings []Finding
	index, total := 0, 0
	for _, in := range inputs {
		chunks, err := splitYAML(in.data)
		if err != nil {
			findings = append(findings, Finding{File: in.path, Line: 1, Msg: err.Error()})
			continue
		}
		for _, c := range chunks {
			index++
			doc, errs := decode(in.path, index, c.line, c.text)
			if doc == nil && len(errs) == 0 {
				continue // empty document (only comments / whitespace)
			}
			total++
			for _, e := range errs {
				e.File, e.Line = in.path, c.line
				findings = append(findings, e)
			}
			if doc != nil && len(errs) == 0 {
				docs = append(docs, doc)
			}
		}
	}
	if total == 0 && len(findings) == 0 {
		findings = append(findings, Finding{File: inputs[0].path, Line: 1, Msg: "no Kubernetes documents found"})
	}
	// Cross-document checks only make sense on a fully decoded set.
	if len(findings) == 0 {
		findings = append(findings, check(docs)...)
	}
	sort.SliceStable(findings, func(i, j int) bool {
		return docIndex(findings[i]) < docIndex(findings[j])
	})
	return docs, total, findings
}

func docIndex(f Finding) int {
	if f.Doc == nil {
		return 0
	}
	return f.Doc.Index
}

type chunk struct {
	line int // 1-based line of the document's first line
	text []byte
}

var separator = regexp.MustCompile(`^---(\s.*)?$`)

// splitYAML splits a multi-document YAML stream at "---" lines.
func splitYAML(data []byte) ([]chunk, error) {
	var chunks []chunk
	var cur bytes.Buffer
	start := 1
	lineNo := 0
	sc := bufio.NewScanner(bytes.NewReader(data))
	sc.Buffer(make([]byte, 1024*1024), 64*1024*1024)
	for sc.Scan() {
		lineNo++
		line := sc.Text()
		if separator.MatchString(strings.TrimRight(line, "\r")) {
			chunks = append(chunks, chunk{line: start, text: append([]byte(nil), cur.Bytes()...)})
			cur.Reset()
			start = lineNo + 1
			continue
		}
		cur.WriteString(line)
		cur.WriteByte('\n')
	}
	if err := sc.Err(); err != nil {
		return nil, err
	}
	chunks = append(chunks, chunk{line: start, text: cur.Bytes()})
	return chunks, nil
}

func apiVersion() string {
	if bi, ok := debug.ReadBuildInfo(); ok {
		for _, d := range bi.Deps {
			if d.Path == "k8s.io/api" {
				return d.Version
			}
		}
	}
	return "(unknown version)"
}

func kindSummary(docs []*Doc) string {
	counts := map[string]int{}
	for _, d := range docs {
		counts[d.Kind]++
	}
	kinds := make([]string, 0, len(counts))
	for k := range counts {
		kinds = append(kinds, k)
	}
	sort.Strings(kinds)
	parts := make([]string, len(kinds))
	for i, k := range kinds {
		parts[i] = fmt.Sprintf("%s %d", k, counts[k])
	}
	return strings.Join(parts, ", ")
}
