//go:build !linux

package exporter

import "path/filepath"

// exchangeFile writes one state file through writeDurable off Linux
// (store_exchange_linux.go swaps a spare in).
type exchangeFile struct{ dir, name string }

// newExchangeFile writes file name in directory dir.
func newExchangeFile(dir, name string) *exchangeFile { return &exchangeFile{dir: dir, name: name} }

// write replaces the file with data durably.
func (x *exchangeFile) write(data []byte) error {
	return writeDurable(filepath.Join(x.dir, x.name), data)
}

// Close does nothing: no file is kept open.
func (x *exchangeFile) Close() {}
