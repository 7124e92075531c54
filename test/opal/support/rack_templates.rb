# frozen_string_literal: true

# Rack's ERB templates as .opalerb files for opal/rack_compat/: Opal has no runtime ERB, so
# the ShowExceptions and ShowStatus pages are compiled by Opal at build time. The text is
# taken from the installed Rack; test_rack_templates checks the committed files still match,
# and `ruby test/opal/support/rack_templates.rb` rewrites them after a Rack upgrade.
module RackTemplates
  SOURCES = {
    "show_exceptions_page" => ["rack/show_exceptions.rb", /TEMPLATE = ERB.new\(<<-'HTML'\.gsub\(\/\^      \/, ''\)\)\n(.*?)\n\s*HTML\n/m, /^      /],
    "show_status_page" => ["rack/show_status.rb", /TEMPLATE = <<'HTML'\n(.*?)\nHTML\n/m, nil],
  }.freeze

  module_function

  def rack_lib
    File.join(Gem.loaded_specs.fetch("rack").full_gem_path, "lib")
  end

  def target(name)
    File.expand_path("../../../opal/rack_compat/#{name}.opalerb", __dir__)
  end

  # The .opalerb text for one template.
  def render(name)
    file, pattern, indent = SOURCES.fetch(name)
    body = File.read(File.join(rack_lib, file))[pattern, 1] or raise "no template in #{file}"
    body = body.gsub(indent, "") if indent
    raise "#{file}: interpolation in template" if body.include?("\#{") || body.match?(/#[@$]/)

    # Opal::ERB places the text in a double-quoted Ruby string; Rack's heredoc is single-quoted.
    body = body.gsub("\\") { "\\\\" }
    "<%# UP!: Rack #{Gem.loaded_specs.fetch('rack').version} #{file} TEMPLATE (MIT licence), made by " \
      "test/opal/support/rack_templates.rb: Opal has no runtime ERB. %>#{body}\n"
  end
end

if $PROGRAM_NAME == __FILE__
  require "bundler/setup"
  RackTemplates::SOURCES.each_key { |name| File.write(RackTemplates.target(name), RackTemplates.render(name)) }
end
