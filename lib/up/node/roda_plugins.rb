# frozen_string_literal: true

module Up
  module Node
    # Finds the Roda plugins an app loads, so that Up::Node::Bundle can compile them in.
    #
    # Roda loads a plugin by name when the app calls `plugin :sessions`: it runs
    # `require "roda/plugins/#{name}"`, a require Opal cannot follow at compile time, so the
    # plugin would be missing from the bundle and fail at run time. The same goes for the
    # plugins a plugin loads (`app.plugin :_json`) and those Roda loads itself (`plugin
    # :error_handler`). This reads the Ruby files of a first compile for `plugin :name` calls
    # (comments skipped), then each plugin file found on the Opal load path for more, and
    # returns their require names. The app stays as it is on MRI; a name that is not a file
    # of roda/plugins/ (a plugin module passed by constant, a typo) is left to Roda to report.
    #
    # Bundle creates one per build. It owns nothing.
    class RodaPlugins
      # `plugin :name`, `plugin(:name`, `app.plugin :name` at the start of an expression.
      PLUGIN_CALL = /(?:\A|[\s.;({])plugin[\s(]\s*:(\w+)/

      # paths: the Opal load path, in its order (our opal/ first, so a replaced plugin file
      # is the one read).
      def initialize(paths)
        @paths = paths
      end

      # files: absolute paths of the Ruby files compiled. Returns the require names
      # ("roda/plugins/json") of every plugin they load, directly or through other plugins;
      # none unless Roda itself is among the files.
      def requires(files)
        return [] unless files.any? { |file| file.end_with?("/roda/plugins.rb") }

        found = {}
        queue = files.flat_map { |file| names_in(file) }
        while (name = queue.shift)
          next if found.key?(name)

          file = locate(name)
          found[name] = file
          queue.concat(names_in(file)) if file
        end
        found.select { |_name, file| file }.keys.map { |name| "roda/plugins/#{name}" }
      end

      private

      def names_in(file)
        File.foreach(file).reject { |line| line.lstrip.start_with?("#") }
            .flat_map { |line| line.scan(PLUGIN_CALL).flatten }
      rescue SystemCallError
        []
      end

      def locate(name)
        @paths.map { |dir| File.join(dir, "roda", "plugins", "#{name}.rb") }.find { |f| File.file?(f) }
      end
    end
  end
end
