package main

import (
	"bufio"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// Every good-*.yaml fixture must pass; every bad-*.yaml must fail with
// exactly one problem whose text contains the fixture's "# expect:" line.
func TestFixtures(t *testing.T) {
	files, err := filepath.Glob("testdata/*.yaml")
	if err != nil || len(files) == 0 {
		t.Fatalf("no fixtures: %v", err)
	}
	for _, file := range files {
		base := filepath.Base(file)
		t.Run(base, func(t *testing.T) {
			data, err := os.ReadFile(file)
			if err != nil {
				t.Fatal(err)
			}
			_, _, findings := Validate([]input{{path: file, data: data}})
			switch {
			case strings.HasPrefix(base, "good-"):
				for _, f := range findings {
					t.Errorf("unexpected problem: %s", f)
				}
			case strings.HasPrefix(base, "bad-"):
				line, _ := bufio.NewReader(strings.NewReader(string(data))).ReadString('\n')
				expect := strings.TrimSpace(strings.TrimPrefix(line, "# expect:"))
				if expect == "" || expect == strings.TrimSpace(line) {
					t.Fatalf("first line must be '# expect: <message part>'")
				}
				if len(findings) != 1 {
					t.Fatalf("want exactly 1 problem, got %d: %v", len(findings), findings)
				}
				if got := findings[0].String(); !strings.Contains(got, expect) {
					t.Fatalf("problem %q does not contain %q", got, expect)
				}
			default:
				t.Fatalf("fixture names start with good- or bad-")
			}
		})
	}
}

func TestSplitYAML(t *testing.T) {
	chunks, err := splitYAML([]byte("a: 1\n--- # comment\nb: 2\n---\n\n---\nc: 3\n"))
	if err != nil {
		t.Fatal(err)
	}
	if len(chunks) != 4 {
		t.Fatalf("want 4 chunks, got %d", len(chunks))
	}
	wantLines := []int{1, 3, 5, 7}
	for i, c := range chunks {
		if c.line != wantLines[i] {
			t.Errorf("chunk %d starts at line %d, want %d", i, c.line, wantLines[i])
		}
	}
}

func TestNATSMaxPayload(t *testing.T) {
	cases := []struct {
		conf  string
		want  int64 // -1: not set
		isErr bool
	}{
		{"max_payload: 8MB\n", 8 << 20, false},
		{"max_payload = 8388608\n", 8 << 20, false},
		{"max_payload 16mb # more than enough\n", 16 << 20, false},
		{"max_payload: 8M\n", 8_000_000, false},
		{"max_payload: 8MiB; port: 4222\n", 8 << 20, false},
		{"max_payload: 1MB\nmax_payload: 8MB\n", 8 << 20, false}, // the last one wins
		{"# max_payload: 8MB\n", -1, false},
		{"// max_payload: 8MB\n", -1, false},
		{"cluster {\n  max_payload: 8MB\n}\n", -1, false}, // not top level
		{"leafnodes { remotes: [ { url: \"nats://x\" } ] }\nmax_payload: 8MB\n", 8 << 20, false},
		{"max_payloads: 8MB\n", -1, false},
		{"max_payload: \"8MB\"\n", 0, true},
		{"max_payload: $MAX\n", 0, true},
		{"max_payload: 8XB\n", 0, true},
	}
	for _, c := range cases {
		raw, found := natsTopLevelValue(c.conf, "max_payload")
		if !found {
			if c.want != -1 {
				t.Errorf("%q: max_payload not found", c.conf)
			}
			continue
		}
		if c.want == -1 {
			t.Errorf("%q: found max_payload %q, want none", c.conf, raw)
			continue
		}
		n, err := natsSize(raw)
		if (err != nil) != c.isErr {
			t.Errorf("%q: error %v, want error %v", c.conf, err, c.isErr)
		} else if !c.isErr && n != c.want {
			t.Errorf("%q: %d bytes, want %d", c.conf, n, c.want)
		}
	}
}

func TestCassandraCommitLog(t *testing.T) {
	const allow = "-Dcassandra.config.allow_system_properties=true "
	cases := []struct {
		jvmOpts, extraOpts string
		want               string // "" = synced; otherwise part of the problem
	}{
		{"", allow + "-Dcassandra.settings.commitlog_sync=group -Dcassandra.settings.commitlog_sync_group_window=10ms -Dcassandra.settings.commitlog_sync_period=0ms", ""},
		{"", allow + "-Dcassandra.settings.commitlog_sync=group -Dcassandra.settings.commitlog_sync_group_window=1s -Dcassandra.settings.commitlog_sync_period=0", ""},
		{"", allow + "-Dcassandra.settings.commitlog_sync=batch -Dcassandra.settings.commitlog_sync_period=0ms", ""},
		{"", "  -Xss512k\n" + allow + " -Dcassandra.settings.commitlog_sync=batch\t-Dcassandra.settings.commitlog_sync_period=0s ", ""},
		{"", "", "left at the image's periodic sync"},
		{"", "-Xmx1G", "left at the image's periodic sync"},
		{"", "-Dcassandra.settings.commitlog_sync=batch -Dcassandra.settings.commitlog_sync_period=0ms", "Cassandra ignores them"},
		{"", "-Dcassandra.config.allow_system_properties=false -Dcassandra.settings.commitlog_sync=batch -Dcassandra.settings.commitlog_sync_period=0ms", "Cassandra ignores them"},
		{"", allow, "sets no -Dcassandra.settings.commitlog_sync"},
		{"", allow + "-Dcassandra.settings.commitlog_sync=periodic", "commitlog_sync is periodic"},
		{"", allow + "-Dcassandra.settings.commitlog_sync=Group -Dcassandra.settings.commitlog_sync_period=0ms", "not group or batch"},
		{"", allow + "-Dcassandra.settings.commitlog_sync=group -Dcassandra.settings.commitlog_sync_period=0ms", "needs commitlog_sync_group_window"},
		{"", allow + "-Dcassandra.settings.commitlog_sync=group -Dcassandra.settings.commitlog_sync_group_window=0ms -Dcassandra.settings.commitlog_sync_period=0ms", "must be a positive duration"},
		{"", allow + "-Dcassandra.settings.commitlog_sync=group -Dcassandra.settings.commitlog_sync_group_window=10 -Dcassandra.settings.commitlog_sync_period=0ms", "must be a positive duration"},
		{"", allow + "-Dcassandra.settings.commitlog_sync=group -Dcassandra.settings.commitlog_sync_group_window=10ms", "needs -Dcassandra.settings.commitlog_sync_period=0ms"},
		{"", allow + "-Dcassandra.settings.commitlog_sync=batch -Dcassandra.settings.commitlog_sync_period=10000ms", "needs -Dcassandra.settings.commitlog_sync_period=0ms"},
		// The last of a repeated option wins, as in the JVM.
		{"", allow + "-Dcassandra.settings.commitlog_sync=batch -Dcassandra.settings.commitlog_sync_period=0ms -Dcassandra.settings.commitlog_sync=periodic", "commitlog_sync is periodic"},
		{"-Dcassandra.skip_sync=true", allow + "-Dcassandra.settings.commitlog_sync=batch -Dcassandra.settings.commitlog_sync_period=0ms", "skip_sync"},
		{"", allow + "-Dcassandra.settings.commitlog_sync=batch -Dcassandra.settings.commitlog_sync_period=0ms -Dcassandra.skip_sync", "skip_sync"},
		{"-Dcassandra.skip_sync=false", allow + "-Dcassandra.settings.commitlog_sync=batch -Dcassandra.settings.commitlog_sync_period=0ms", ""},
	}
	for _, c := range cases {
		got := cassandraCommitLogProblem(c.jvmOpts, c.extraOpts)
		switch {
		case c.want == "" && got != "":
			t.Errorf("%q / %q: unexpected problem %q", c.jvmOpts, c.extraOpts, got)
		case c.want != "" && !strings.Contains(got, c.want):
			t.Errorf("%q / %q: problem %q, want one containing %q", c.jvmOpts, c.extraOpts, got, c.want)
		}
	}
}
