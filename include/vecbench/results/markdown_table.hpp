// A markdown table (GitHub's pipe tables): the header row, the alignment row and the body rows
// are written here only, for every table vecbench prints (run, compare, report, trace).
#pragma once
#include <algorithm>
#include <string>
#include <utility>
#include <vector>

namespace vecbench {

/// Column alignment: left ("---") or right ("---:", numbers).
enum class Align { left, right };

/// One table: columns fixed at construction, rows added one by one. Cells are markdown as given
/// (escape text with md_cell where it may hold a pipe); an empty cell stays empty.
class MarkdownTable {
 public:
  struct Column {
    std::string title;
    Align align = Align::left;
  };

  explicit MarkdownTable(std::vector<Column> columns) : columns_(std::move(columns)) {}

  /// Adds a column (before the first row).
  void add_column(std::string title, Align align) { columns_.push_back({std::move(title), align}); }

  /// Adds a row; a row with fewer cells than columns is filled with empty cells.
  MarkdownTable& row(std::vector<std::string> cells) {
    cells.resize(std::max(cells.size(), columns_.size()));
    rows_.push_back(std::move(cells));
    return *this;
  }

  bool empty() const { return rows_.empty(); }

  /// The table, every line ending in a newline.
  std::string str() const {
    std::vector<std::string> titles;
    std::string align = "|";
    for (const Column& c : columns_) {
      titles.push_back(c.title);
      align += c.align == Align::right ? "---:|" : "---|";
    }
    std::string s = line(titles) + align + "\n";
    for (const auto& r : rows_) s += line(r);
    return s;
  }

 private:
  static std::string line(const std::vector<std::string>& cells) {
    std::string s = "|";
    for (const std::string& c : cells) s += c.empty() ? " |" : " " + c + " |";
    return s + "\n";
  }

  std::vector<Column> columns_;
  std::vector<std::vector<std::string>> rows_;
};

}  // namespace vecbench
