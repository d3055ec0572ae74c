package main

import (
	"fmt"
	"regexp"
	"strconv"
	"strings"
)

// Parley's durability promise in cluster mode: a write answered `success` is
// on disk (its commit log fsynced) on a quorum of replicas. Cassandra's own
// default, `commitlog_sync: periodic`, acknowledges a write once it is in the
// commit log's memory-mapped segment and fsyncs every commitlog_sync_period
// (10 s in the image's cassandra.yaml), so a power loss of a quorum of
// replicas loses acknowledged writes. `group` and `batch` acknowledge only
// after the fsync.
//
// Containers running the official cassandra image are configured through
// JVM_EXTRA_OPTS (appended to the JVM's options by cassandra-env.sh) with
// Cassandra's system-property overrides of cassandra.yaml, which take effect
// only with -Dcassandra.config.allow_system_properties=true and are ignored
// silently without it (checked against Cassandra 5.0.8).
const cassandraSyncFix = "set JVM_EXTRA_OPTS to -Dcassandra.config.allow_system_properties=true " +
	"-Dcassandra.settings.commitlog_sync=group -Dcassandra.settings.commitlog_sync_group_window=10ms " +
	"-Dcassandra.settings.commitlog_sync_period=0ms"

// checkCassandraCommitLog checks that every container running the official
// cassandra image fsyncs its commit log before it acknowledges a write.
func (s *set) checkCassandraCommitLog(w *workload) {
	d := w.doc
	spec := &w.template.Spec
	for i := range spec.Containers {
		c := &spec.Containers[i]
		if imageRepo(c.Image) != "cassandra" {
			continue
		}
		env := s.containerEnv(d, c)
		if problem := cassandraCommitLogProblem(env["JVM_OPTS"], env["JVM_EXTRA_OPTS"]); problem != "" {
			s.errorf(d, fmt.Sprintf("%s.spec.containers[%d].env", w.path, i),
				"Cassandra commit log not synced before a write is acknowledged: %s (%s)", problem, cassandraSyncFix)
		}
	}
}

// jvmSystemProperties returns the -Dname=value options of a JVM option
// string (split on white space, as cassandra-env.sh does); the last one of a
// name wins, as in the JVM. -Dname alone is the empty string.
func jvmSystemProperties(opts string) map[string]string {
	props := map[string]string{}
	for _, word := range strings.Fields(opts) {
		if !strings.HasPrefix(word, "-D") {
			continue
		}
		name, value, _ := strings.Cut(strings.TrimPrefix(word, "-D"), "=")
		props[name] = value
	}
	return props
}

var cassandraDuration = regexp.MustCompile(`^(\d+)(ms|s)$`)

// cassandraMillis reads a cassandra.yaml duration in ms or s ("10ms", "1s";
// a bare "0" too), returning milliseconds.
func cassandraMillis(v string) (int64, bool) {
	if v == "0" {
		return 0, true
	}
	m := cassandraDuration.FindStringSubmatch(v)
	if m == nil {
		return 0, false
	}
	n, err := strconv.ParseInt(m[1], 10, 64)
	if err != nil {
		return 0, false
	}
	if m[2] == "s" {
		n *= 1000
	}
	return n, true
}

// cassandraCommitLogProblem says why the JVM options of a Cassandra started
// from the official image (its cassandra.yaml: periodic, 10000ms) do not make
// it fsync the commit log before acknowledging a write, or "" when they do.
// jvmOpts is only searched for cassandra.skip_sync; the settings are read
// from extraOpts (JVM_EXTRA_OPTS).
func cassandraCommitLogProblem(jvmOpts, extraOpts string) string {
	for _, opts := range []string{jvmOpts, extraOpts} {
		if v, ok := jvmSystemProperties(opts)["cassandra.skip_sync"]; ok && !strings.EqualFold(v, "false") {
			return "-Dcassandra.skip_sync turns every commit-log fsync into a no-op (for tests only)"
		}
	}
	props := jvmSystemProperties(extraOpts)
	const prefix = "cassandra.settings."
	setting := func(name string) (string, bool) {
		v, ok := props[prefix+name]
		return v, ok
	}
	overrides := false
	for name := range props {
		if strings.HasPrefix(name, prefix) {
			overrides = true
		}
	}
	if !strings.EqualFold(props["cassandra.config.allow_system_properties"], "true") {
		if overrides {
			return "JVM_EXTRA_OPTS sets cassandra.settings.* without -Dcassandra.config.allow_system_properties=true, so Cassandra ignores them and the commit log stays periodic (fsync every 10 s)"
		}
		return "the commit log is left at the image's periodic sync (fsync every 10 s, writes acknowledged before it: a power loss of a quorum of replicas loses acknowledged writes)"
	}
	mode, ok := setting("commitlog_sync")
	switch {
	case !ok:
		return "JVM_EXTRA_OPTS sets no -Dcassandra.settings.commitlog_sync: the commit log is left at the image's periodic sync (fsync every 10 s)"
	case mode == "periodic":
		return "commitlog_sync is periodic (writes acknowledged before their fsync)"
	case mode == "group":
		window, ok := setting("commitlog_sync_group_window")
		if !ok {
			return "commitlog_sync group needs commitlog_sync_group_window (Cassandra refuses to start without it)"
		}
		if ms, valid := cassandraMillis(window); !valid || ms == 0 {
			return fmt.Sprintf("commitlog_sync_group_window %q must be a positive duration in ms or s, e.g. 10ms", window)
		}
	case mode == "batch":
	default:
		return fmt.Sprintf("commitlog_sync %q is not group or batch", mode)
	}
	period, ok := setting("commitlog_sync_period")
	if ms, valid := cassandraMillis(period); !ok || !valid || ms != 0 {
		return fmt.Sprintf("commitlog_sync %s needs -Dcassandra.settings.commitlog_sync_period=0ms (the image's cassandra.yaml sets 10000ms, and Cassandra refuses to start with both)", mode)
	}
	return ""
}
