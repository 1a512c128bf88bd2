// Package javaregex translates Java regular expressions (java.util.regex.Pattern) into
// Go's RE2 syntax, and parses the comma-separated lists of them that Kafka and
// MirrorMaker 2 configure, such as groups and topics.exclude.
//
// A translated expression fully matches exactly the names the Java one fully matches. A
// construct RE2 cannot match the same way (lookaround, backreferences, possessive
// quantifiers, atomic groups, …) is rejected with an error naming the pattern, never
// approximated.
//
// It is a leaf package: configuration validates lists with it and filters match with
// it, without either depending on the other.
package javaregex
