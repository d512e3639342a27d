// The independent reader of deletion-vector.test.ts: RoaringBitmap (Java, the library Iceberg uses).
// Reads the 32-bit portable bitmap in args[0], prints its values (comma-separated) on one line,
// writes the library's own serialization of them to args[1] (as is: array/bitmap containers) and
// to args[2] (after runOptimize: run containers where they are smaller).
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.file.Files;
import java.nio.file.Path;
import org.roaringbitmap.RoaringBitmap;

public class RoaringCheck {
  static byte[] bytesOf(RoaringBitmap b) {
    ByteBuffer out = ByteBuffer.allocate(b.serializedSizeInBytes()).order(ByteOrder.LITTLE_ENDIAN);
    b.serialize(out);
    return out.array();
  }

  public static void main(String[] args) throws Exception {
    RoaringBitmap b = new RoaringBitmap();
    b.deserialize(ByteBuffer.wrap(Files.readAllBytes(Path.of(args[0]))).order(ByteOrder.LITTLE_ENDIAN));
    StringBuilder s = new StringBuilder();
    b.forEach((int x) -> { if (s.length() > 0) s.append(','); s.append(Integer.toUnsignedString(x)); });
    System.out.println(s);
    Files.write(Path.of(args[1]), bytesOf(b));
    b.runOptimize();
    Files.write(Path.of(args[2]), bytesOf(b));
  }
}
