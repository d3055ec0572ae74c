package main

import (
	"fmt"
	"path"
	"regexp"
	"strconv"
	"strings"

	corev1 "k8s.io/api/core/v1"
)

// natsMinPayload is the smallest max_payload Parley works with: register
// replies for a few thousand users and large GET /messages pages travel as one
// NATS message, and the NATS client (actors/runtime/nats-bus.ts) is written for
// servers that accept 8 MiB. nats-server's own default is 1 MiB.
const natsMinPayload = 8 << 20

// checkNATS checks every nats-server container: it must read a config file
// that this set ships (a ConfigMap key mounted into the container), and that
// file must set max_payload to at least natsMinPayload.
func (s *set) checkNATS(w *workload) {
	d := w.doc
	spec := &w.template.Spec
	for i := range spec.Containers {
		c := &spec.Containers[i]
		p := fmt.Sprintf("%s.spec.containers[%d]", w.path, i)
		flags, ok := natsServerFlags(c)
		if !ok {
			continue
		}
		conf := natsConfigFlag(flags)
		if conf == "" {
			s.errorf(d, p+".args", "nats-server runs without --config: max_payload stays at its 1 MiB default (Parley needs at least 8 MiB)")
			continue
		}
		text, where, problem := s.mountedConfigMapFile(d.Namespace(), spec, c, conf)
		if problem != "" {
			s.errorf(d, p+".volumeMounts", "nats-server config %s: %s, so its max_payload cannot be checked", conf, problem)
			continue
		}
		raw, found := natsTopLevelValue(text, "max_payload")
		if !found {
			s.errorf(d, p+".args", "nats-server config %s (%s) sets no max_payload: the 1 MiB default is too small (Parley needs at least 8 MiB, e.g. max_payload: 8MB)", conf, where)
			continue
		}
		n, err := natsSize(raw)
		if err != nil {
			s.errorf(d, p+".args", "nats-server config %s (%s): max_payload %s: %v", conf, where, raw, err)
			continue
		}
		if n < natsMinPayload {
			s.errorf(d, p+".args", "nats-server config %s (%s): max_payload %s is %d bytes, below the 8 MiB (%d bytes) Parley needs (e.g. max_payload: 8MB)", conf, where, raw, n, natsMinPayload)
		}
	}
}

// natsServerFlags reports whether c runs nats-server and returns the
// arguments given to it. A container counts as a NATS server when its command
// (or, without a command, its first arg) is nats-server, or when it runs the
// official nats image with that image's own entrypoint.
func natsServerFlags(c *corev1.Container) ([]string, bool) {
	switch {
	case len(c.Command) > 0 && path.Base(c.Command[0]) == "nats-server":
		return append(append([]string(nil), c.Command[1:]...), c.Args...), true
	case len(c.Command) == 0 && len(c.Args) > 0 && path.Base(c.Args[0]) == "nats-server":
		return c.Args[1:], true
	case len(c.Command) == 0 && imageRepo(c.Image) == "nats":
		return c.Args, true
	}
	return nil, false
}

// imageRepo is the last path element of an image reference, without tag or digest.
func imageRepo(image string) string {
	if i := strings.Index(image, "@"); i >= 0 {
		image = image[:i]
	}
	last := image[strings.LastIndex(image, "/")+1:]
	if i := strings.Index(last, ":"); i >= 0 {
		last = last[:i]
	}
	return last
}

// natsConfigFlag returns the value of -c/--config (Go flag syntax: one or two
// dashes, value as the next argument or after "=").
func natsConfigFlag(flags []string) string {
	conf := ""
	for i := 0; i < len(flags); i++ {
		f := flags[i]
		if !strings.HasPrefix(f, "-") {
			continue
		}
		name, value, hasValue := strings.Cut(strings.TrimLeft(f, "-"), "=")
		if name != "c" && name != "config" {
			continue
		}
		if !hasValue && i+1 < len(flags) {
			i++
			value = flags[i]
		}
		conf = value
	}
	return conf
}

// mountedConfigMapFile finds the file at file inside container c as a key of
// a ConfigMap in this set. It returns the text and "ConfigMap NAME key KEY", or
// a problem saying why the file is not one.
func (s *set) mountedConfigMapFile(ns string, spec *corev1.PodSpec, c *corev1.Container, file string) (string, string, string) {
	file = path.Clean(file)
	var mount *corev1.VolumeMount
	rel := ""
	for i := range c.VolumeMounts {
		m := &c.VolumeMounts[i]
		dir := path.Clean(m.MountPath)
		switch {
		case m.SubPath != "" && dir == file:
			mount, rel = m, m.SubPath
		case m.SubPath == "" && strings.HasPrefix(file, dir+"/") && (mount == nil || len(dir) > len(path.Clean(mount.MountPath))):
			mount, rel = m, strings.TrimPrefix(file, dir+"/")
		}
	}
	if mount == nil {
		return "", "", "no volume is mounted at its directory"
	}
	var vol *corev1.Volume
	for i := range spec.Volumes {
		if spec.Volumes[i].Name == mount.Name {
			vol = &spec.Volumes[i]
		}
	}
	if vol == nil || vol.ConfigMap == nil {
		return "", "", fmt.Sprintf("volume %q is not a ConfigMap volume", mount.Name)
	}
	key := rel
	if len(vol.ConfigMap.Items) > 0 {
		key = ""
		for _, it := range vol.ConfigMap.Items {
			if path.Clean(it.Path) == rel {
				key = it.Key
			}
		}
		if key == "" {
			return "", "", fmt.Sprintf("ConfigMap volume %q projects no item at %s", mount.Name, rel)
		}
	}
	cmDoc := s.find("ConfigMap", ns, vol.ConfigMap.Name)
	if cmDoc == nil {
		return "", "", fmt.Sprintf("ConfigMap %q is not in this set", vol.ConfigMap.Name)
	}
	text, ok := cmDoc.Obj.(*corev1.ConfigMap).Data[key]
	if !ok {
		return "", "", fmt.Sprintf("ConfigMap %q has no key %q", vol.ConfigMap.Name, key)
	}
	return text, fmt.Sprintf("ConfigMap %s key %s", vol.ConfigMap.Name, key), ""
}

var natsKeyValue = regexp.MustCompile(`^([A-Za-z_][A-Za-z0-9_-]*)(?:\s*[:=]\s*|\s+)("[^"]*"|'[^']*'|[^\s;,{}\[\]]+)`)

// natsTopLevelValue returns the raw value of key at the top level of a NATS
// server config (outside every {} block and [] list); the last one wins, as
// in nats-server. Comments (# and //) are ignored. `include` is not followed.
func natsTopLevelValue(text, key string) (string, bool) {
	depth := 0
	value, found := "", false
	for _, line := range strings.Split(text, "\n") {
		trimmed := strings.TrimSpace(line)
		if strings.HasPrefix(trimmed, "//") {
			continue
		}
		// Drop a # comment and measure nesting, outside quoted strings.
		var b strings.Builder
		quote := rune(0)
		startDepth := depth
	scan:
		for _, r := range trimmed {
			switch {
			case quote != 0:
				if r == quote {
					quote = 0
				}
			case r == '"' || r == '\'':
				quote = r
			case r == '#':
				break scan
			case r == '{' || r == '[':
				depth++
			case r == '}' || r == ']':
				depth--
			}
			b.WriteRune(r)
		}
		if startDepth != 0 {
			continue
		}
		if m := natsKeyValue.FindStringSubmatch(b.String()); m != nil && strings.EqualFold(m[1], key) {
			value, found = m[2], true
		}
	}
	return value, found
}

var natsNumber = regexp.MustCompile(`^(\d+)\s*([A-Za-z]*)$`)

// natsSize reads a NATS config integer with nats-server's size suffixes
// (k/m/g are powers of 1000, kb/mb/gb and ki/mi/gi powers of 1024).
func natsSize(raw string) (int64, error) {
	if strings.HasPrefix(raw, `"`) || strings.HasPrefix(raw, `'`) {
		return 0, fmt.Errorf("is quoted: nats-server needs a number here (unquoted, e.g. 8MB)")
	}
	if strings.HasPrefix(raw, "$") {
		return 0, fmt.Errorf("is a variable: set a literal size so it can be checked")
	}
	m := natsNumber.FindStringSubmatch(raw)
	if m == nil {
		return 0, fmt.Errorf("is not a number with an optional size suffix")
	}
	n, err := strconv.ParseInt(m[1], 10, 64)
	if err != nil {
		return 0, fmt.Errorf("out of range")
	}
	mult := map[string]int64{
		"": 1, "k": 1000, "m": 1000 * 1000, "g": 1000 * 1000 * 1000,
		"kb": 1 << 10, "ki": 1 << 10, "kib": 1 << 10,
		"mb": 1 << 20, "mi": 1 << 20, "mib": 1 << 20,
		"gb": 1 << 30, "gi": 1 << 30, "gib": 1 << 30,
	}
	f, ok := mult[strings.ToLower(m[2])]
	if !ok {
		return 0, fmt.Errorf("unknown size suffix %q", m[2])
	}
	return n * f, nil
}
