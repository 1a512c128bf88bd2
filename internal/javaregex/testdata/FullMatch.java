import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.nio.charset.StandardCharsets;
import java.util.HexFormat;
import java.util.regex.Pattern;
import java.util.regex.PatternSyntaxException;

/**
 * Reads lines of hex-encoded UTF-8 fields, "pattern input input ...", and answers each
 * with "E" if Java's Pattern rejects the pattern, else one digit per input: 1 if the
 * pattern matches the whole input (Matcher.matches), 0 if not. Run by regex_java_test.go.
 */
public class FullMatch {
    public static void main(String[] args) throws Exception {
        HexFormat hex = HexFormat.of();
        BufferedReader in = new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8));
        StringBuilder out = new StringBuilder();
        for (String line; (line = in.readLine()) != null; ) {
            String[] fields = line.split(" ", -1);
            Pattern pattern;
            try {
                pattern = Pattern.compile(new String(hex.parseHex(fields[0]), StandardCharsets.UTF_8));
            } catch (PatternSyntaxException e) {
                out.append("E\n");
                continue;
            }
            for (int i = 1; i < fields.length; i++) {
                String input = new String(hex.parseHex(fields[i]), StandardCharsets.UTF_8);
                out.append(pattern.matcher(input).matches() ? '1' : '0');
            }
            out.append('\n');
        }
        System.out.print(out);
    }
}
