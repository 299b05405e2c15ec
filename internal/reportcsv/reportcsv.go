// Package reportcsv writes JSON documents (report.json and the per-run
// results of compare, pareto, recommend, plan and diff) as CSV: one row per
// document, its leaves as columns named by their dotted keys (docs/cli.md,
// "Output").
//
// Columns come in document order; a key only some rows have is added where
// it first appears. A list of scalars is one cell, its items joined by ";";
// a list holding an object or a list gets the index as a key part
// ("gpus.0.name"); null is an empty cell. Numbers are written as the JSON
// has them, so a cell reads back to the same value.
package reportcsv

import (
	"bytes"
	"encoding/csv"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"
)

// Field is one cell: a dotted key and its value.
type Field struct {
	Key, Value string
}

// Flatten returns the leaves of the JSON object doc in document order, each
// key prefixed with prefix (when not empty) and a dot.
func Flatten(doc []byte, prefix string) ([]Field, error) {
	dec := json.NewDecoder(bytes.NewReader(doc))
	dec.UseNumber()
	var out []Field
	if err := flatten(dec, prefix, &out); err != nil {
		return nil, fmt.Errorf("flattening JSON: %w", err)
	}
	if _, err := dec.Token(); err != io.EOF {
		return nil, errors.New("flattening JSON: data after the document")
	}
	return out, nil
}

// flatten reads one value from dec.
func flatten(dec *json.Decoder, key string, out *[]Field) error {
	tok, err := dec.Token()
	if err != nil {
		return err
	}
	switch t := tok.(type) {
	case json.Delim:
		if t == '{' {
			return flattenObject(dec, key, out)
		}
		return flattenArray(dec, key, out)
	default:
		*out = append(*out, Field{key, scalar(tok)})
		return nil
	}
}

func flattenObject(dec *json.Decoder, key string, out *[]Field) error {
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return err
		}
		name, _ := tok.(string)
		if err := flatten(dec, join(key, name), out); err != nil {
			return err
		}
	}
	_, err := dec.Token() // '}'
	return err
}

// flattenArray writes a list of scalars as one cell; a list with an object
// or a list in it gets indexed keys.
func flattenArray(dec *json.Decoder, key string, out *[]Field) error {
	var raw []json.RawMessage
	for dec.More() {
		var m json.RawMessage
		if err := dec.Decode(&m); err != nil {
			return err
		}
		raw = append(raw, m)
	}
	if _, err := dec.Token(); err != nil { // ']'
		return err
	}
	nested := false
	for _, m := range raw {
		if c := bytes.TrimSpace(m); len(c) > 0 && (c[0] == '{' || c[0] == '[') {
			nested = true
		}
	}
	if !nested {
		cells := make([]string, len(raw))
		for i, m := range raw {
			d := json.NewDecoder(bytes.NewReader(m))
			d.UseNumber()
			tok, err := d.Token()
			if err != nil {
				return err
			}
			cells[i] = scalar(tok)
		}
		*out = append(*out, Field{key, strings.Join(cells, ";")})
		return nil
	}
	for i, m := range raw {
		d := json.NewDecoder(bytes.NewReader(m))
		d.UseNumber()
		if err := flatten(d, join(key, fmt.Sprint(i)), out); err != nil {
			return err
		}
	}
	return nil
}

func scalar(tok json.Token) string {
	switch v := tok.(type) {
	case nil:
		return ""
	case string:
		return v
	case json.Number:
		return v.String()
	case bool:
		if v {
			return "true"
		}
		return "false"
	}
	return fmt.Sprint(tok)
}

func join(prefix, key string) string {
	if prefix == "" {
		return key
	}
	return prefix + "." + key
}

// Table collects rows and writes them as CSV with the union of their keys
// as the header.
type Table struct {
	keys  []string
	index map[string]int
	rows  []map[string]string
}

// Add appends a row.
func (t *Table) Add(fields ...[]Field) {
	if t.index == nil {
		t.index = map[string]int{}
	}
	row := map[string]string{}
	for _, fs := range fields {
		for _, f := range fs {
			if _, ok := t.index[f.Key]; !ok {
				t.index[f.Key] = len(t.keys)
				t.keys = append(t.keys, f.Key)
			}
			row[f.Key] = f.Value
		}
	}
	t.rows = append(t.rows, row)
}

// AddJSON appends a row: lead's fields, then the leaves of doc.
func (t *Table) AddJSON(lead []Field, doc []byte) error {
	fs, err := Flatten(doc, "")
	if err != nil {
		return err
	}
	t.Add(lead, fs)
	return nil
}

// Write writes the header and every row (RFC 4180).
func (t *Table) Write(w io.Writer) error {
	cw := csv.NewWriter(w)
	if err := cw.Write(t.keys); err != nil {
		return err
	}
	for _, r := range t.rows {
		rec := make([]string, len(t.keys))
		for i, k := range t.keys {
			rec[i] = r[k]
		}
		if err := cw.Write(rec); err != nil {
			return err
		}
	}
	cw.Flush()
	return cw.Error()
}

// Value is the cell of a command's own column: strings as they are, a
// list of strings joined by ";", floats in their shortest form (a nil
// *float64 is an empty cell), anything else as fmt.Sprint writes it.
func Value(key string, v any) Field {
	switch x := v.(type) {
	case string:
		return Field{Key: key, Value: x}
	case []string:
		return Field{Key: key, Value: strings.Join(x, ";")}
	case float64:
		return Field{Key: key, Value: strconv.FormatFloat(x, 'g', -1, 64)}
	case *float64:
		if x == nil {
			return Field{Key: key}
		}
		return Value(key, *x)
	}
	return Field{Key: key, Value: fmt.Sprint(v)}
}

// WriteDocument writes the JSON document doc (a report.json) as one CSV row.
func WriteDocument(w io.Writer, doc []byte) error {
	var t Table
	if err := t.AddJSON(nil, doc); err != nil {
		return err
	}
	return t.Write(w)
}
