/* The HTML report's script, inlined in the page (its sha256 is the Content-Security-Policy
   script-src): sorting a table by a column (numbers by their data-value), "open all", and
   opening every section before printing (a closed <details> prints as its summary only). */
(function(){
function key(td){if(!td)return"";var v=td.getAttribute("data-value");
if(v!==null&&v!==""&&!isNaN(v))return parseFloat(v);return td.textContent.trim().toLowerCase();}
document.querySelectorAll("table.sortable").forEach(function(table){
var ths=table.querySelectorAll("thead th");
ths.forEach(function(th,i){th.setAttribute("aria-sort","none");th.tabIndex=0;
function sort(){var body=table.tBodies[0];var rows=Array.prototype.slice.call(body.rows);
var dir=th.getAttribute("aria-sort")==="ascending"?-1:1;
rows.sort(function(a,b){var x=key(a.cells[i]),y=key(b.cells[i]);
if(typeof x!==typeof y){x=String(x);y=String(y);}return x<y?-dir:x>y?dir:0;});
ths.forEach(function(o){o.setAttribute("aria-sort","none");});
th.setAttribute("aria-sort",dir===1?"ascending":"descending");table.classList.add("sorted");
rows.forEach(function(r){body.appendChild(r);});}
th.addEventListener("click",sort);
th.addEventListener("keydown",function(e){if(e.key==="Enter"){sort();}});});});
function openAll(){document.querySelectorAll("details").forEach(function(d){d.open=true;});}
var b=document.getElementById("expand");if(b){b.addEventListener("click",openAll);}
window.addEventListener("beforeprint",openAll);
})();
