# frozen_string_literal: true

require_relative "../runner"
require_relative "../process_memory"

module Up
  class Cluster < Runner
    # --worker-max-rss: the master's check of its workers' resident memory. A worker past the
    # limit is asked to stop as a TERM would (it stops accepting and finishes the requests it
    # has), and Up::Cluster forks its replacement at once, so no request fails. Up::Cluster
    # creates one when the limit is set and calls #check from its loop; it counts the
    # replacements for the metrics endpoint.
    class MemoryLimit
      # Reading /proc for every worker is cheap, but the loop can wake many times a second.
      INTERVAL = 1

      attr_reader :replaced

      def initialize(max_mb, log)
        @max_bytes = max_mb * 1024 * 1024
        @max_mb = max_mb
        @log = log
        @replaced = 0
        @checked_at = nil
      end

      # Stops the serving workers among handles that are past the limit.
      def check(handles, now)
        return if @checked_at && now - @checked_at < INTERVAL

        @checked_at = now
        handles.each do |h|
          next unless h.booted? && !h.stopping? && !h.inherited?

          rss = ProcessMemory.rss(h.pid)
          next unless rss && rss > @max_bytes

          @replaced += 1
          @log.call("worker #{h.index} (pid #{h.pid}) uses #{rss / (1024 * 1024)} MB, past --worker-max-rss " \
                    "#{@max_mb} MB; replacing it once its requests are done")
          h.term!(now)
        end
      end
    end
  end
end
