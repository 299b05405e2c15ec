package benchjob

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"strings"
)

// datasetEntry is one line of a JSONL dataset: either {"prompt", optional
// "max_tokens"} or a ShareGPT record {"conversations": [{"from","value"}...]},
// whose first human turn is the prompt and whose first answer's length
// (estimated, 4 characters per token) is max_tokens.
type datasetEntry struct {
	Prompt        *string `json:"prompt"`
	MaxTokens     *int    `json:"max_tokens"`
	Conversations []struct {
		From  string `json:"from"`
		Value string `json:"value"`
	} `json:"conversations"`
}

// MaxDatasetLine and MaxTraceLine bound one line of a dataset and of a
// trace (a longer one is an error naming its line and the limit).
const (
	MaxDatasetLine = 64 << 20
	MaxTraceLine   = 16 << 20
)

// utf8BOM is the byte order mark some editors put first in a UTF-8 file:
// a dataset or trace starting with it has it dropped.
var utf8BOM = []byte("\xef\xbb\xbf")

// lineErr explains a scanner's error: a line over limit bytes.
func lineErr(err error, limit int) error {
	if errors.Is(err, bufio.ErrTooLong) {
		return fmt.Errorf("longer than %d MiB, the limit of one line", limit>>20)
	}
	return err
}

// loadDataset reads a JSONL dataset (or a JSON array of the same records,
// as ShareGPT files come). Entries without a usable prompt are an error
// naming the file and line; fallbackMax is used where no max_tokens is given.
func loadDataset(path string, fallbackMax int) ([]Prompt, error) {
	raw, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("dataset: %w", err)
	}
	raw = bytes.TrimPrefix(raw, utf8BOM) // an editor's byte order mark
	var records []json.RawMessage
	var lines []int
	if t := bytes.TrimSpace(raw); len(t) > 0 && t[0] == '[' {
		if err := json.Unmarshal(t, &records); err != nil {
			return nil, fmt.Errorf("dataset %s: JSON array: %w", path, err)
		}
		for i := range records {
			lines = append(lines, i+1)
		}
	} else {
		sc := bufio.NewScanner(bytes.NewReader(raw))
		sc.Buffer(make([]byte, 0, 1<<20), MaxDatasetLine)
		n := 0
		for sc.Scan() {
			n++
			l := bytes.TrimSpace(sc.Bytes())
			if len(l) == 0 {
				continue
			}
			records = append(records, append(json.RawMessage(nil), l...))
			lines = append(lines, n)
		}
		if err := sc.Err(); err != nil {
			return nil, fmt.Errorf("dataset %s: line %d: %w", path, n+1, lineErr(err, MaxDatasetLine))
		}
	}
	var out []Prompt
	for i, rec := range records {
		where := fmt.Sprintf("dataset %s: line %d", path, lines[i])
		var e datasetEntry
		dec := json.NewDecoder(bytes.NewReader(rec))
		if err := dec.Decode(&e); err != nil {
			return nil, fmt.Errorf("%s: %w", where, err)
		}
		p := Prompt{MaxTokens: fallbackMax}
		switch {
		case e.Prompt != nil:
			p.Text = *e.Prompt
		case len(e.Conversations) > 0:
			for j, turn := range e.Conversations {
				if p.Text == "" && (turn.From == "human" || turn.From == "user") {
					p.Text = turn.Value
					if j+1 < len(e.Conversations) {
						p.MaxTokens = max(1, estimateTokens(e.Conversations[j+1].Value))
					}
				}
			}
		}
		if strings.TrimSpace(p.Text) == "" {
			return nil, fmt.Errorf("%s: no prompt (want \"prompt\" or ShareGPT \"conversations\" with a human turn)", where)
		}
		if e.MaxTokens != nil {
			if *e.MaxTokens <= 0 {
				return nil, fmt.Errorf("%s: max_tokens %d must be positive", where, *e.MaxTokens)
			}
			p.MaxTokens = *e.MaxTokens
		}
		p.InputTokens = estimateTokens(p.Text)
		out = append(out, p)
	}
	if len(out) == 0 {
		return nil, errors.New("dataset " + path + ": no entries")
	}
	return out, nil
}
