package jaegertest

import "syscall"

// childProcAttr puts Jaeger in its own process group, so a Ctrl-C aimed at
// `go test` reaches only the test binary (which then stops Jaeger), and
// has the kernel SIGKILL Jaeger if the test binary dies first. Pdeathsig fires
// when the starting OS thread exits; Go keeps its threads, so in practice that
// is the process.
func childProcAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
}
