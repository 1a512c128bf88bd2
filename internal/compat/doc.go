// Package compat holds no code, only tests: the codecs of package messages
// checked against Kafka's and MirrorMaker 2's own Java classes (golden
// vectors) and against the records a real broker writes to
// __consumer_offsets. They live here so that messages imports nothing of the
// project, test beds included.
package compat
