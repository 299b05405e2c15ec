// Package experiment expands an experiment file (strict YAML) into a list of
// named, validated run configurations: a single config, a matrix (`runs:`),
// a sweep (cartesian product of `sweep:` axes over a base config), or a
// matrix crossed with a sweep; `--set path=value` overrides go on top.
//
// The package is generic over the configuration type, so it knows nothing of
// any one command: Expand[benchjob.Config] builds the runs of `joulemark
// bench --config`. Every check (unknown keys with their line, types, paths of
// axes and --set, name collisions, the config's own Validate) happens before
// anything is returned, so no run starts from a file that has a mistake in a
// later run.
package experiment

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"reflect"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"go.yaml.in/yaml/v3"
)

// Validator is the constraint on the configuration type: *T validates itself.
type Validator[T any] interface {
	*T
	Validate() error
}

// Run is one expanded run.
type Run[T any] struct {
	// Name is the deterministic run name (experiment name, matrix entry name
	// and sweep values joined by "-"); "" for a plain single config without
	// an experiment name.
	Name string
	// Origin says where the run comes from, for --dry-run: the matrix entry
	// and the sweep values and --set overrides that apply to it.
	Origin []string
	Config T
}

// Options tune the expansion.
type Options[T any] struct {
	// Defaults returns the config every run starts from; nil means T's zero value.
	Defaults func() T
	// SetName, when set, stores the run name into the config (benchjob:
	// RunID) before validation. Not called for an empty name.
	SetName func(c *T, name string)
	// Sets are --set overrides, "section.field=value" with a YAML value,
	// applied to every run after the file's own values.
	Sets []string
	// NameKey is the key SetName fills (benchjob: run_id): a --set of it
	// replaces the run name for a single run and is refused for several
	// (they would share it), never silently overwritten.
	NameKey string
	// RepeatKey is the config key (benchjob: repeat) a top-level `repeat: N`
	// of an experiment file sets in every run, below base and the entries;
	// "" refuses a top-level repeat.
	RepeatKey string
}

// document is the strict shape of an experiment file, used to check every
// key and type against T with yaml's own KnownFields, lines included.
type document[T any] struct {
	Name  string        `yaml:"name"`
	Base  T             `yaml:"base"`
	Runs  []runEntry[T] `yaml:"runs"`
	Sweep yaml.Node     `yaml:"sweep"`
	// Repeat is checked against Options.RepeatKey's type.
	Repeat yaml.Node `yaml:"repeat"`
}

type runEntry[T any] struct {
	Name   string `yaml:"name"`
	Config T      `yaml:",inline"`
}

// experimentKeys are the top-level keys that make a file an experiment file;
// a file without any of them is one plain config.
var experimentKeys = map[string]bool{"base": true, "runs": true, "sweep": true}

// nameRe is what a run name may hold (a run id is a label value and a
// directory name).
var nameRe = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._-]*$`)

// LoadFile expands the experiment file at path; errors name the file.
func LoadFile[T any, PT Validator[T]](path string, opts Options[T]) ([]Run[T], error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("experiment: %w", err)
	}
	runs, err := Expand[T, PT](bytes.NewReader(data), opts)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return runs, nil
}

// Expand reads one YAML document and expands it into validated runs.
func Expand[T any, PT Validator[T]](r io.Reader, opts Options[T]) ([]Run[T], error) {
	data, err := io.ReadAll(r)
	if err != nil {
		return nil, fmt.Errorf("read: %w", err)
	}
	top, err := topMapping(data)
	if err != nil {
		return nil, err
	}
	sets, err := parseSets[T](opts.Sets)
	if err != nil {
		return nil, err
	}
	if !isExperiment(top) {
		if err := strictDecode[T](data); err != nil {
			return nil, err
		}
		runs := []Run[T]{{}}
		return finish[T, PT](runs, []*yaml.Node{top}, sets, opts)
	}
	if err := strictDecode[document[T]](data); err != nil {
		return nil, err
	}
	h, err := readHeader(top)
	if err != nil {
		return nil, err
	}
	if err := h.checkRepeat(opts.RepeatKey); err != nil {
		return nil, err
	}
	axes, err := parseAxes[T](h.sweep)
	if err != nil {
		return nil, err
	}
	if len(h.entries) == 0 && len(axes) > 0 && h.name == "" {
		return nil, fmt.Errorf("line %d: name: required with a sweep (it prefixes every run name)", top.Line)
	}
	layers, err := h.layers()
	if err != nil {
		return nil, err
	}
	if err := checkSize(len(layers), axes); err != nil {
		return nil, err
	}
	runs, runNodes := crossSweep[T](layers, axes)
	return finish[T, PT](runs, runNodes, sets, opts)
}

// topMapping parses data as exactly one YAML document and returns its
// top-level mapping.
func topMapping(data []byte) (*yaml.Node, error) {
	var root yaml.Node
	dec := yaml.NewDecoder(bytes.NewReader(data))
	if err := dec.Decode(&root); err != nil {
		if errors.Is(err, io.EOF) {
			return nil, errors.New("empty experiment file")
		}
		return nil, err
	}
	var extra yaml.Node
	if err := dec.Decode(&extra); !errors.Is(err, io.EOF) {
		if err != nil {
			return nil, err
		}
		return nil, fmt.Errorf("line %d: one YAML document expected, found another", extra.Line)
	}
	top := root.Content[0]
	if top.Kind != yaml.MappingNode {
		return nil, fmt.Errorf("line %d: the file must be a mapping of keys", top.Line)
	}
	return top, nil
}

// isExperiment reports whether the top-level mapping has any of the
// experimentKeys.
func isExperiment(top *yaml.Node) bool {
	for i := 0; i < len(top.Content); i += 2 {
		if experimentKeys[top.Content[i].Value] {
			return true
		}
	}
	return false
}

// header is an experiment file's top-level keys, as nodes.
type header struct {
	line    int // of the top-level mapping
	name    string
	base    *yaml.Node
	entries []*yaml.Node
	sweep   *yaml.Node
	repeat  *yaml.Node // a layer {RepeatKey: N} under base, once checked
}

// readHeader reads and checks the experiment file's top-level keys.
func readHeader(top *yaml.Node) (header, error) {
	h := header{line: top.Line}
	for i := 0; i < len(top.Content); i += 2 {
		k, v := top.Content[i], top.Content[i+1]
		switch k.Value {
		case "name":
			h.name = v.Value
		case "base":
			if v.Kind != yaml.MappingNode && !isNull(v) {
				return header{}, fmt.Errorf("line %d: base: want a mapping", v.Line)
			}
			h.base = v
		case "runs":
			if v.Kind != yaml.SequenceNode || len(v.Content) == 0 {
				return header{}, fmt.Errorf("line %d: runs: want a non-empty list", v.Line)
			}
			h.entries = v.Content
		case "sweep":
			h.sweep = v
		case "repeat":
			h.repeat = v
		}
	}
	if h.name != "" && !nameRe.MatchString(h.name) {
		return header{}, fmt.Errorf("line %d: name %q: letters, digits, '.', '_', '-' only, starting with a letter or digit", h.line, h.name)
	}
	return h, nil
}

// checkRepeat turns a top-level repeat into the layer {key: N} every run
// starts from, its type checked against T.
func (h *header) checkRepeat(key string) error {
	if h.repeat == nil {
		return nil
	}
	if key == "" {
		return fmt.Errorf("line %d: repeat: not supported by this experiment", h.repeat.Line)
	}
	if h.repeat.Kind != yaml.ScalarNode {
		return fmt.Errorf("line %d: repeat: want a number of repetitions", h.repeat.Line)
	}
	h.repeat = pathNode([]string{key}, h.repeat)
	return nil
}

// layer is one matrix entry (or the base alone): its run name, origin and
// the config nodes merged in order.
type layer struct {
	name   string
	origin []string
	nodes  []*yaml.Node
}

// layers are the matrix entries over the base, or the base alone without
// a matrix.
func (h header) layers() ([]layer, error) {
	if len(h.entries) == 0 {
		return []layer{{name: h.name, nodes: []*yaml.Node{h.repeat, h.base}}}, nil
	}
	var layers []layer
	for i, e := range h.entries {
		if e.Kind != yaml.MappingNode {
			return nil, fmt.Errorf("line %d: runs[%d]: want a mapping", e.Line, i)
		}
		var entryName string
		cfg := &yaml.Node{Kind: yaml.MappingNode, Tag: "!!map", Line: e.Line, Column: e.Column}
		for j := 0; j < len(e.Content); j += 2 {
			if e.Content[j].Value == "name" {
				entryName = e.Content[j+1].Value
				continue
			}
			cfg.Content = append(cfg.Content, e.Content[j], e.Content[j+1])
		}
		if entryName == "" {
			return nil, fmt.Errorf("line %d: runs[%d]: name: required", e.Line, i)
		}
		if !nameRe.MatchString(entryName) {
			return nil, fmt.Errorf("line %d: runs[%d]: name %q: letters, digits, '.', '_', '-' only, starting with a letter or digit", e.Line, i, entryName)
		}
		layers = append(layers, layer{name: joinName(h.name, entryName), origin: []string{fmt.Sprintf("runs[%d] %s", i, entryName)}, nodes: []*yaml.Node{h.repeat, h.base, cfg}})
	}
	return layers, nil
}

// MaxRuns is the most runs one experiment expands to (its matrix entries
// times the product of its sweep axes' lengths): checked before anything
// is expanded, so a mistyped sweep fails at once instead of filling the
// memory.
const MaxRuns = 10000

// checkSize refuses an experiment of more than MaxRuns runs, naming its
// size and shape (counted in float64: no overflow).
func checkSize(layers int, axes []axis) error {
	n, shape := float64(layers), []string{strconv.Itoa(layers) + " entries"}
	for _, ax := range axes {
		n *= float64(len(ax.values))
		shape = append(shape, fmt.Sprintf("%d %s", len(ax.values), strings.Join(ax.path, ".")))
	}
	if n > MaxRuns {
		return fmt.Errorf("the experiment expands to %.0f runs (%s), more than the %d allowed: split it, or sweep fewer values", n, strings.Join(shape, " × "), MaxRuns)
	}
	return nil
}

// crossSweep crosses each layer with the sweep (first axis outermost) and
// returns the runs, named but not decoded, with their merged config nodes.
func crossSweep[T any](layers []layer, axes []axis) ([]Run[T], []*yaml.Node) {
	combos := cartesian(axes)
	var runs []Run[T]
	var runNodes []*yaml.Node
	for _, l := range layers {
		for _, combo := range combos {
			nodes := append([]*yaml.Node(nil), l.nodes...)
			n := l.name
			origin := append([]string(nil), l.origin...)
			for ai, vi := range combo {
				ax := axes[ai]
				nodes = append(nodes, pathNode(ax.path, ax.values[vi]))
				n = joinName(n, ax.label+"-"+ax.labels[vi])
				origin = append(origin, fmt.Sprintf("%s=%s", strings.Join(ax.path, "."), ax.labels[vi]))
			}
			runs = append(runs, Run[T]{Name: n, Origin: origin})
			runNodes = append(runNodes, mergeAll(nodes))
		}
	}
	return runs, runNodes
}

// finish applies the --set overrides, decodes each run over the defaults,
// checks name collisions and validates every run; all errors are joined.
func finish[T any, PT Validator[T]](runs []Run[T], nodes []*yaml.Node, sets []setOverride, opts Options[T]) ([]Run[T], error) {
	var errs []error
	nameSet := opts.NameKey != "" && slices.ContainsFunc(sets, func(s setOverride) bool {
		return len(s.path) == 1 && s.path[0] == opts.NameKey
	})
	if nameSet && len(runs) > 1 {
		return nil, fmt.Errorf("--set %s: the experiment expands to %d runs, which would share that one %s; each run is named after the experiment and its entry, and a repeat gets fresh ones (docs/experiments.md, \"Run ids\")", opts.NameKey, len(runs), opts.NameKey)
	}
	seen := map[string]int{}
	for i := range runs {
		r := &runs[i]
		if r.Name != "" {
			if j, dup := seen[r.Name]; dup {
				errs = append(errs, fmt.Errorf("run name %q is produced twice: by [%s] and by [%s]", r.Name, strings.Join(runs[j].Origin, ", "), strings.Join(r.Origin, ", ")))
				continue
			}
			seen[r.Name] = i
		}
		layers := []*yaml.Node{nodes[i]}
		for _, s := range sets {
			layers = append(layers, pathNode(s.path, s.value))
			r.Origin = append(r.Origin, "--set "+s.text)
		}
		merged := mergeAll(layers)
		if opts.Defaults != nil {
			r.Config = opts.Defaults()
		}
		if merged != nil {
			if err := merged.Decode(&r.Config); err != nil {
				errs = append(errs, fmt.Errorf("run %s: %w", describe(*r), err))
				continue
			}
		}
		if r.Name != "" && opts.SetName != nil && !nameSet {
			opts.SetName(&r.Config, r.Name)
		}
		if err := PT(&r.Config).Validate(); err != nil {
			errs = append(errs, fmt.Errorf("run %s: %w", describe(*r), err))
		}
	}
	if len(errs) > 0 {
		return nil, errors.Join(errs...)
	}
	return runs, nil
}

func describe[T any](r Run[T]) string {
	if r.Name != "" {
		return fmt.Sprintf("%q", r.Name)
	}
	if len(r.Origin) > 0 {
		return strings.Join(r.Origin, ", ")
	}
	return "(single config)"
}

func joinName(a, b string) string {
	if a == "" {
		return b
	}
	return a + "-" + b
}

func isNull(n *yaml.Node) bool { return n.Kind == yaml.ScalarNode && n.Tag == "!!null" }

// strictDecode decodes the whole file into V with unknown keys as errors,
// which yaml reports with their line.
func strictDecode[V any](data []byte) error {
	var v V
	dec := yaml.NewDecoder(bytes.NewReader(data))
	dec.KnownFields(true)
	err := dec.Decode(&v)
	var te *yaml.TypeError
	if errors.As(err, &te) {
		te.Errors = withSuggestions(reflect.TypeFor[V](), te.Errors)
	}
	return err
}
