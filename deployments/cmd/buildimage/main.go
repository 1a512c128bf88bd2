// Command buildimage builds checkpointd's container image as a tarball
// without a container daemon (make image). See package image.
//
//	go run ./cmd/buildimage -o ../bin/checkpointd-image.tar
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"time"

	"github.com/checkpointd/checkpointd/deployments/image"
)

func main() {
	out := flag.String("o", "../bin/checkpointd-image.tar", "tarball to write")
	root := flag.String("module", "..", "checkpointd's main module")
	version := flag.String("version", "dev", "version stamped into the binary and the image labels")
	tag := flag.String("tag", "", "image name:tag (default checkpointd:<version>)")
	arch := flag.String("arch", "", "GOARCH of the image (default: this machine's)")
	certs := flag.String("ca-certs", image.DefaultCACerts, "PEM bundle of CA certificates to ship")
	flag.Parse()
	if *tag == "" {
		*tag = "checkpointd:" + *version
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	start := time.Now()
	img, err := image.Build(ctx, image.Options{ModuleRoot: *root, Version: *version, Arch: *arch, CACerts: *certs})
	if err == nil {
		err = image.WriteFile(*out, img, *tag)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "buildimage:", err)
		os.Exit(1)
	}
	digest, _ := img.Digest()
	st, _ := os.Stat(*out)
	abs, _ := filepath.Abs(*out)
	fmt.Printf("%s: %s %s, %.1f MB, built in %s\n", abs, *tag, digest, float64(st.Size())/1e6, time.Since(start).Round(100*time.Millisecond))
}
