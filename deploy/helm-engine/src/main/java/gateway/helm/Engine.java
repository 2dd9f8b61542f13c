package gateway.helm;

import com.marcnuri.helm.Helm;
import com.marcnuri.helm.LintResult;
import com.marcnuri.helm.TemplateCommand;
import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.Paths;

/**
 * Runs Helm's engine on a list of requests read from stdin, one per line, fields separated by tabs, so one JVM and one
 * load of the native library serve every case of the chart test:
 *
 * <pre>
 *   lint      case  chartDir
 *   template  case  chartDir  release  namespace  kubeVersion  [valuesFile ...]
 *   version
 * </pre>
 *
 * Each answer is a file in the output directory (the only argument): case.yaml (the manifest) or case.error (Helm's
 * message) for template; case.lint ("failed" or "ok" on the first line, then Helm's messages) for lint; version.txt.
 * A request Helm refuses is an answer, not a crash: the caller decides what a refusal means.
 */
public final class Engine {
  private Engine() {}

  public static void main(String[] args) throws Exception {
    if (args.length != 1) {
      System.err.println("usage: Engine <outputDir>  (requests on stdin)");
      System.exit(2);
    }
    Path out = Paths.get(args[0]);
    Files.createDirectories(out);
    BufferedReader in = new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8));
    for (String line = in.readLine(); line != null; line = in.readLine()) {
      if (line.isBlank()) continue;
      String[] f = line.split("\t");
      switch (f[0]) {
        case "version" -> write(out.resolve("version.txt"), Helm.version().call());
        case "lint" -> lint(out, f);
        case "template" -> template(out, f);
        default -> throw new IllegalArgumentException("unknown request: " + f[0]);
      }
    }
  }

  private static void lint(Path out, String[] f) throws Exception {
    String text;
    try {
      LintResult r = new Helm(Paths.get(f[2])).lint().strict().call();
      text = (r.isFailed() ? "failed" : "ok") + "\n" + String.join("\n", r.getMessages()) + "\n";
    } catch (RuntimeException e) {
      text = "failed\n" + e.getMessage() + "\n";
    }
    write(out.resolve(f[1] + ".lint"), text);
  }

  private static void template(Path out, String[] f) throws Exception {
    // Helm's default is the Kubernetes its client library was built against, not the cluster's: name it.
    TemplateCommand t = new Helm(Paths.get(f[2])).template().withName(f[3]).withNamespace(f[4]).withKubeVersion(f[5]);
    for (int i = 6; i < f.length; i++) t = t.withValuesFile(Paths.get(f[i]));
    try {
      write(out.resolve(f[1] + ".yaml"), t.call());
    } catch (RuntimeException e) {
      write(out.resolve(f[1] + ".error"), String.valueOf(e.getMessage()));
    }
  }

  private static void write(Path file, String text) throws Exception {
    Files.writeString(file, text, StandardCharsets.UTF_8);
  }
}
