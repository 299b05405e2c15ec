// Command versionprobe prints the stamped version, for TestReleaseVersion:
// built with the Dockerfile's -ldflags -X, it shows whether the stamp
// reaches internal/version.
package main

import (
	"fmt"

	"github.com/joulemark/joulemark/internal/version"
)

func main() {
	v, _, _ := version.Info()
	fmt.Println(v)
}
