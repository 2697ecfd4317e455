// The driver's heap watched from inside its JVM (heap.py): once the heap stays full after the collector's work, the JVM ends with the
// exit code of -XX:+ExitOnOutOfMemoryError, so the app notices a lost session within seconds, as after a crash, instead of a JVM that
// thrashes in full collections for minutes while every page waits on it. Compiled by Janino (janino.py): plain Java without generics.

import java.lang.management.GarbageCollectorMXBean;
import java.lang.management.ManagementFactory;
import java.lang.management.MemoryPoolMXBean;
import java.lang.management.MemoryType;
import java.lang.management.MemoryUsage;
import java.util.ArrayList;
import java.util.List;

public class HeapWatch implements Runnable {

    private double heldShare;
    private long windowMillis;
    private int fullCollections;
    private double collectingShare;
    private int exitCode;

    /** Watch in a thread of its own: end the JVM with exitCode once, over the last windowMillis, the heap in use after collection stayed
     * at least heldShare of its maximum and the collector either ran fullCollections full (old-generation) collections or spent
     * collectingShare of the time collecting. */
    public Thread start(double heldShare, int windowMillis, int fullCollections, double collectingShare, int exitCode) {
        this.heldShare = heldShare;
        this.windowMillis = windowMillis;
        this.fullCollections = fullCollections;
        this.collectingShare = collectingShare;
        this.exitCode = exitCode;
        Thread thread = new Thread(this, "streaming-lab-heap-watch");
        thread.setDaemon(true);
        thread.setPriority(Thread.MAX_PRIORITY);
        thread.start();
        return thread;
    }

    public void run() {
        List beans = ManagementFactory.getGarbageCollectorMXBeans();
        ArrayList samples = new ArrayList();  // long[] {when, full collections, collecting millis}, oldest first
        while (true) {
            try {
                Thread.sleep(250);
            } catch (InterruptedException stopped) {
                return;
            }
            long now = System.nanoTime() / 1000000L;
            long full = 0;
            long collecting = 0;
            for (int i = 0; i < beans.size(); i++) {
                GarbageCollectorMXBean bean = (GarbageCollectorMXBean) beans.get(i);
                String name = bean.getName();
                if (name.indexOf("Old") >= 0 || name.indexOf("MarkSweep") >= 0) full += Math.max(0L, bean.getCollectionCount());
                collecting += Math.max(0L, bean.getCollectionTime());
            }
            samples.add(new long[] {now, full, collecting});
            while (samples.size() > 2 && now - ((long[]) samples.get(1))[0] >= windowMillis) samples.remove(0);
            long[] first = (long[]) samples.get(0);
            long span = now - first[0];
            if (span < windowMillis) continue;
            boolean thrashing = full - first[1] >= fullCollections || (collecting - first[2]) >= collectingShare * span;
            double held = heldAfterCollection();
            if (thrashing && held >= heldShare) {
                System.err.println("streaming-lab: the driver's heap stayed " + Math.round(held * 100) + "% full after " + (full - first[1])
                    + " full collections in " + span + " ms: ending the JVM (exit code " + exitCode + ")");
                System.err.flush();
                Runtime.getRuntime().halt(exitCode);
            }
        }
    }

    /** The heap in use after the latest collection of each of its pools, as a share of the heap's maximum. */
    public static double heldAfterCollection() {
        long used = 0;
        List pools = ManagementFactory.getMemoryPoolMXBeans();
        for (int i = 0; i < pools.size(); i++) {
            MemoryPoolMXBean pool = (MemoryPoolMXBean) pools.get(i);
            if (pool.getType() != MemoryType.HEAP || !pool.isCollectionUsageThresholdSupported()) continue;
            MemoryUsage usage = pool.getCollectionUsage();
            if (usage != null) used += usage.getUsed();
        }
        return used / (double) Runtime.getRuntime().maxMemory();
    }
}
