# frozen_string_literal: true

require "etc"
require "opal/cache"
require_relative "opal_builder"

module Up
  module Node
    # Compiles Opal's parser and compiler (Up::Node::OpalBuilder.parser) into Opal's cache of
    # compiled files in a forked child, while Up::Node::Bundle compiles the app on another
    # core. Whether the app needs the parser is known only once all of its files are compiled;
    # an app that does then builds its parser file from that cache instead of compiling the
    # parser's 160 files after the app's. An app that does not stops the child.
    #
    # The child shares nothing with the build but Opal's cache, whose entries it only adds:
    # an entry it leaves half-written when stopped fails its gzip check and is compiled again.
    # It owns the child process.
    class ParserWarmup
      # load_path: the bundle's. Returns nil where there is no fork, no second core (the child
      # would only slow the build down) or no cache to fill.
      def self.start(load_path)
        return unless Process.respond_to?(:fork) && Etc.nprocessors > 1
        return if Opal.cache.is_a?(Opal::Cache::NullCache)

        new(load_path)
      end

      # The child compiles the parser as if nothing were built before it, so that it needs not
      # wait for the app's first files: it shares few files with any bundle.
      def initialize(load_path)
        @pid = fork do
          # Whatever happens here, the build in the parent says it: it compiles these files itself.
          $stderr = File.open(File::NULL, "w")
          OpalBuilder.parser(OpalBuilder.create(load_path), load_path)
        rescue StandardError, ScriptError
          nil
        ensure
          # exit!: the parent's at_exit handlers are not the child's to run.
          exit!(0)
        end
      end

      # Waits for the child: the parser's files are in Opal's cache once it returns.
      def finish
        wait
      end

      # Stops the child, when the parser is not needed or the build failed.
      def stop
        Process.kill(:KILL, @pid) if @pid
        wait
      rescue Errno::ESRCH
        wait
      end

      private

      def wait
        Process.wait(@pid) if @pid
        @pid = nil
      rescue Errno::ECHILD
        @pid = nil
      end
    end
  end
end
