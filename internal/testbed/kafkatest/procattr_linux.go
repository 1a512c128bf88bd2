package kafkatest

import "syscall"

// childProcAttr puts the JVM in its own process group, so a Ctrl-C aimed at
// `go test` reaches only the test binary (which then tears down in order), and
// has the kernel SIGKILL the JVM if the test binary dies first. Pdeathsig fires
// when the starting OS thread exits; Go keeps its threads, so in practice that
// is the process.
func childProcAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
}
